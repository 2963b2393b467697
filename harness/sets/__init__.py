"""What is asked: set loading, pins, corpus sources."""
