"""Word embeddings: SGNS, subword SGNS, PPMI-SVD, GloVe, and their evaluation."""
