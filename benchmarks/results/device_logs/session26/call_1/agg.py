"""Aggregate py-spy raw stacks: inclusive and self samples per frame. Usage: agg.py RAW N_INCL N_SELF"""
import sys, collections, re
self_c=collections.Counter(); incl=collections.Counter(); total=0
for line in open(sys.argv[1]):
    stack, n = line.rsplit(" ",1); n=int(n); total+=n
    frames=[re.sub(r" \(/.*?/(c3prof|site-packages)/", r" (\1/", f) for f in stack.split(";")]
    self_c[frames[-1]]+=n
    for f in set(frames): incl[f]+=n
print("total", total)
print("--- inclusive"); [print(f"{v:6d} {v/total:5.1%} {k}") for k,v in incl.most_common(int(sys.argv[2]))]
print("--- self"); [print(f"{v:6d} {v/total:5.1%} {k}") for k,v in self_c.most_common(int(sys.argv[3]))]
