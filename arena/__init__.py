"""Arena: answers, two-game pairwise judging, Bradley-Terry ratings, audits and the index suite."""

__version__ = "0.1.0"
