"""What is written: the report document and one module per output format. Never starts a process."""
