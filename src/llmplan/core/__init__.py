"""The Qt-free, I/O-free estimation engine: pure functions over frozen specs."""
