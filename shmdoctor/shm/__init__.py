"""What shmdoctor does with a tmpfs of shared memory: tell its segments apart (segments), remove the leaked ones
safely (removal), and sample its use over time (sampling). Used by clean, watch, bench and run."""
