"""Evaluation: input batches, the tECS, and the streaming evaluator."""
