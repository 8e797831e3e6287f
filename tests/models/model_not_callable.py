model = 42
example_inputs = ()
