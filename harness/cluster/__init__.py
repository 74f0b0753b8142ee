"""Gate and campaign items on a Dask distributed cluster (`--scheduler ADDRESS`, or `local`).

An item is one substrate: its whole campaign plan (a substrate's mutants judged in order by one chain of
workers, so statuses that depend on the order the trials are tried in are those of a local run), handed
by a Dask worker to a process of ours (`item`), which runs the same code as a local campaign and prints
each result as it is stored; the Dask worker forwards each to a `distributed.Queue`, and the client
stores it (`campaign`). A fault or a hang kills our process, never the Dask worker; a Dask worker that
dies has its items run again elsewhere by the scheduler, and a result already stored is kept, not
judged twice. `connect` opens the client, starting a local cluster for `local`.
"""
