"""Prepare stages: normalise, split and describe each kind of corpus."""
