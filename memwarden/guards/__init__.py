"""Guards on the governed path: write validators and read-time visibility."""
