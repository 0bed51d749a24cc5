# Loop forever; SIGALRM handler exits 0 before the time limit.
import os, signal
signal.signal(signal.SIGALRM, lambda *a: os._exit(0))
signal.alarm(1)
while True:
    pass
