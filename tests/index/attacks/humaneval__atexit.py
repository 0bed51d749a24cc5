# Crash, with an atexit handler that exits 0.
import atexit, os
atexit.register(lambda: os._exit(0))
def add(x, y):
    raise ValueError("no")
