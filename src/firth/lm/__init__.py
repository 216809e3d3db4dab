"""Language models: Kneser-Ney n-grams and neural LMs, compared in perplexity
and bits per character."""
