"""Probes: gather facts (I/O, no opinions). local: this machine or container. The others read other sources."""
