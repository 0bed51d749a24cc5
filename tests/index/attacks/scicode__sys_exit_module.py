import sys
def square(x):
    return x
sys.exit(0)
