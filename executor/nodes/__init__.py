"""One module per node of the executor graph; each node is a function from state to a partial state."""
