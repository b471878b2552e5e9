"""What both families share: advantages, checks, checkpoints, metrics, config files."""
