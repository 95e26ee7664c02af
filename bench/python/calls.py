"""The fixed cost of neardup's datasketch classes per call: signing one
and 390 elements (the flush of a MinHash's buffered elements), creating
a MinHash, an LSH insert and a query. Run with the interpreter of a
virtual environment where the wheel is installed:

    VENV/bin/python bench/python/calls.py

Prints wall and CPU microseconds per call (CPU includes the Go threads).
"""

import time
from neardup import MinHash, MinHashLSH
m=MinHash(num_perm=128); m.update(b"a"); m._slots()
N=20000
t=time.perf_counter(); c=time.process_time()
for i in range(N):
    m.update(b"x"); m._flush()
print("sign 1 element: %.2f us (cpu %.2f)"%((time.perf_counter()-t)/N*1e6,(time.process_time()-c)/N*1e6))
sh=[b"some words of a shingle %d"%i for i in range(390)]
t=time.perf_counter(); c=time.process_time()
for i in range(N//10):
    m.update_batch(sh); m._flush()
print("sign 390 elements: %.2f us (cpu %.2f)"%((time.perf_counter()-t)/N*10*1e6,(time.process_time()-c)/N*10*1e6))
t=time.perf_counter(); c=time.process_time()
for i in range(N):
    MinHash(num_perm=128)
print("construct: %.2f us (cpu %.2f)"%((time.perf_counter()-t)/N*1e6,(time.process_time()-c)/N*1e6))
lsh=MinHashLSH(threshold=0.8,num_perm=128)
t=time.perf_counter(); c=time.process_time()
for i in range(N):
    lsh.insert(i,m)
print("insert: %.2f us (cpu %.2f)"%((time.perf_counter()-t)/N*1e6,(time.process_time()-c)/N*1e6))
m2=MinHash(num_perm=128); m2.update(b"zz")
t=time.perf_counter(); c=time.process_time()
for i in range(N):
    lsh.query(m2)
print("query (0 results): %.2f us (cpu %.2f)"%((time.perf_counter()-t)/N*1e6,(time.process_time()-c)/N*1e6))
