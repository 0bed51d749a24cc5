# Crash, but an atexit handler turns the exit status into 0.
import atexit, os
atexit.register(lambda: os._exit(0))
print("1")
raise RuntimeError("wrong")
