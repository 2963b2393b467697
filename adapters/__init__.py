"""Reference adapters: separate executables that speak protocol v1 (`python -m adapters.NAME`)."""
