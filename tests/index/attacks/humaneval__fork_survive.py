# The parent exits 0 at once; a forked child lingers.
import os, time
if os.fork() != 0:
    os._exit(0)
time.sleep(5)
def add(x, y):
    return 0
