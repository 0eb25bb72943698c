#!/bin/sh
# Stands in for a ptxas that rejects its input.
echo "ptxas fatal : the fake ptxas refuses" >&2
exit 3
