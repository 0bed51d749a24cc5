"""Fixed-answer index suite (Artificial Analysis Intelligence Index method)."""
