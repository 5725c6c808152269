"""`shmdoctor run`'s mechanism: the child started transparently with its signals forwarded (child), its stderr kept
in a bounded ring for the post-mortem (ring), and /dev/shm sampled while it runs (session)."""
