"""Run comparison (the paper's Definition 1): pure functions over runs' times and quality."""
