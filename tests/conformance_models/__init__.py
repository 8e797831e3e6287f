"""Real architectures and project layouts the conformance suite (tests/test_conformance.py) runs."""
