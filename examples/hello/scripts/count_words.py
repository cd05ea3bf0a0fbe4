#!/usr/bin/env python3
"""Prints how many words it was given and which task it runs as."""
import os
import sys

words = sys.argv[1:]
print(f"{len(words)} words: {' '.join(words)}")
print(f"task {os.environ.get('APOLLO11_TASK_ID', '?')} attempt {os.environ.get('APOLLO11_ATTEMPT', '?')}")
