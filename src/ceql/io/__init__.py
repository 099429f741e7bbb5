"""Files in, matches out: readers, writers, bad-input policies, ordering."""
