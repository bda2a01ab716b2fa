class MemoryBudget:
    """Where a batch charges the memory it holds beyond its pooled buffer (C-level methods)."""

def release_free_memory() -> bool: ...
