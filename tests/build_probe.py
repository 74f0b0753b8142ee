"""Every registered substrate's trials built in this process, twice over: the seconds of each round.

A diagnostic for the gate's `inputs built` phase, run by hand on the device: whether building the
trials is slow on a machine by itself (its cores), or only beside the gate's other processes.
Usage: python tests/build_probe.py [--threads N] [--device cuda]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads(N) first")
    parser.add_argument("--device", default="cpu", help="the device the builders are given (default cpu)")
    parser.add_argument("--only", default=None, help="this substrate alone")
    parser.add_argument("--profile", action="store_true", help="cProfile's 25 costliest calls (cumulative), after")
    args = parser.parse_args()
    import torch

    from harness.candidates import candidate_files, import_candidate, make_entry, register_candidate
    from harness.gate.trial_inputs import build_here

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        began = time.perf_counter()
        torch.empty(1, device=device)
        print(f"CUDA context {time.perf_counter() - began:.2f} s")
    print(f"torch threads {torch.get_num_threads()}, device {device}")
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    for round_ in (1, 2):
        total = 0.0
        for path in candidate_files():
            registered = register_candidate(import_candidate(path), path)
            for name, raw in registered.items():
                if args.only and name != args.only:
                    continue
                entry, _problems = make_entry(name, raw, path, partial=True)
                began = time.perf_counter()
                for _suite, n_trials, builder in entry.suites():
                    for t in range(n_trials):
                        build_here(builder, t, device)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                seconds = time.perf_counter() - began
                total += seconds
                if round_ == 1:
                    print(f"  {name:28s} {seconds:.3f} s")
        print(f"round {round_}: {total:.2f} s")
    if profile is not None:
        import pstats

        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
