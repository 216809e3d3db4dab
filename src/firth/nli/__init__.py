"""Natural language inference: a premise+hypothesis classifier and its
hypothesis-only twin (the partial-input baseline of Gururangan et al. 2018 and
Poliak et al. 2018), with the majority class beside them."""
