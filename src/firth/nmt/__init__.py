"""Neural machine translation: recurrent encoder-decoders with and without attention,
a small transformer, greedy and batched beam search, and their evaluation."""
