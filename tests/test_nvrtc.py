"""harness.compiler.nvrtc and harness.compiler.cache: compiling without a GPU, errors with their source line, the cache."""

import pytest
import torch

from harness.compiler import cache, nvrtc, signature
from tests.conftest import registered_entries

SOURCE = 'extern "C" __global__ void k(int* o, long long n) {\n    if (n > 0) o[0] = 1;\n}\n'


@pytest.mark.parametrize("entry", registered_entries(), ids=lambda e: e.name)
def test_every_substrate_compiles_and_its_launch_fits_the_kernel(entry):
    compiled = nvrtc.compile_cuda(entry.cuda, entry.kernel_name, program_name=f"{entry.name}.cu")
    params = signature.kernel_params(compiled.ptx, compiled.lowered_name)
    assert compiled.cubin.startswith(b"\x7fELF")
    for _label, inputs in entry.probe(torch):
        _out, _grid, _block, args = entry.launch(inputs, torch)
        assert signature.check_arguments(params, args) == []


def test_options_are_explicit_and_recorded():
    compiled = nvrtc.compile_cuda(SOURCE, "k", arch="sm_90")
    assert compiled.options[:7] == ("-std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-fmad=true",
                                    "-lineinfo", "-arch=sm_90")
    assert compiled.options[7].startswith("-I")
    assert compiled.arch == "sm_90"
    assert compiled.compiler_version == nvrtc.compiler_version()


def test_compile_error_quotes_the_cuda_line_and_the_python_line():
    broken = 'extern "C" __global__ void k(int* o) {\n  o[0] = undefined_name;\n}\n'
    with pytest.raises(nvrtc.CompileError) as caught:
        nvrtc.compile_cuda(broken, "k", program_name="pad.cu", locate=lambda line: "candidate_pad.py:41")
    assert str(caught.value) == (
        'pad.cu:2 (candidate_pad.py:41): error: identifier "undefined_name" is undefined\n'
        "       2 |   o[0] = undefined_name;"
    )
    assert "1 error detected" in caught.value.log


def test_a_kernel_name_missing_from_the_source_is_named():
    with pytest.raises(nvrtc.CompileError, match=r"^kernel_name 'nope' is not a __global__ function of the source$"):
        nvrtc.compile_cuda(SOURCE, "nope")


def test_a_templated_kernel_is_found_by_its_lowered_name():
    compiled = nvrtc.compile_cuda("template <typename T> __global__ void k(T* o) { o[0] = T(1); }\n", "k<float>")
    assert compiled.lowered_name == "_Z1kIfEvPT_"
    assert [p.size for p in signature.kernel_params(compiled.ptx, compiled.lowered_name)] == [8]


def test_cache_hits_on_the_same_source_and_misses_on_a_change(tmp_path):
    first, first_cached = cache.compile_cached(SOURCE, "k", "sm_90", tmp_path)
    again, again_cached = cache.compile_cached(SOURCE, "k", "sm_90", tmp_path)
    changed, changed_cached = cache.compile_cached(SOURCE.replace("o[0] = 1", "o[0] = 2"), "k", "sm_90", tmp_path)
    other_arch, other_arch_cached = cache.compile_cached(SOURCE, "k", "sm_80", tmp_path)
    assert (first_cached, again_cached, changed_cached, other_arch_cached) == (False, True, False, False)
    assert again == first
    assert changed.cubin != first.cubin and other_arch.cubin != first.cubin


def test_the_same_source_under_another_program_name_is_compiled_again_and_its_line_info_names_that_program(tmp_path):
    # compute-sanitizer gives each report to the program its line info names: a file registering one source twice
    # (or two such substrates' like mutants) must not share the first one's name.
    first, _ = cache.compile_cached(SOURCE, "k", "sm_90", tmp_path, "first.cu")
    second, second_cached = cache.compile_cached(SOURCE, "k", "sm_90", tmp_path, "second.cu")
    assert not second_cached
    assert 'first.cu"' in first.ptx and 'second.cu"' in second.ptx and "first.cu" not in second.ptx


def test_cache_key_covers_source_name_options_and_compiler():
    base = cache.cache_key("src", "k", ("-arch=sm_90",), "13.0")
    assert len({base, cache.cache_key("src2", "k", ("-arch=sm_90",), "13.0"),
                cache.cache_key("src", "k2", ("-arch=sm_90",), "13.0"),
                cache.cache_key("src", "k", ("-arch=sm_80",), "13.0"),
                cache.cache_key("src", "k", ("-arch=sm_90",), "13.1")}) == 5


def test_compile_errors_are_not_cached(tmp_path):
    with pytest.raises(nvrtc.CompileError):
        cache.compile_cached("this is not CUDA", "k", "sm_90", tmp_path)
    assert not list(tmp_path.glob("*"))


def test_a_key_another_process_is_making_is_waited_for_not_made_again(tmp_path):
    import fcntl
    import threading

    key = cache.cache_key("a key another process makes")
    made_here = []
    with open(tmp_path / f"{key}.lock", "a") as other:
        fcntl.flock(other, fcntl.LOCK_EX)  # as a process making the key holds it (an open file description apart)
        with pytest.raises(cache.Busy):
            cache.lookup_or_make(key, ("cubin",), lambda: made_here.append(1) or {"cubin": b"here"}, tmp_path,
                                 wait=False)
        waiting = threading.Thread(target=lambda: made_here.append(cache.lookup_or_make(
            key, ("cubin",), lambda: {"cubin": b"here"}, tmp_path)))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # still waiting for the other
        (tmp_path / f"{key}.cubin").write_bytes(b"the other's")
    waiting.join(5)
    paths, from_cache = made_here[0]
    assert from_cache and paths["cubin"].read_bytes() == b"the other's"
    assert not (tmp_path / f"{key}.lock").exists()


def test_a_cache_on_a_file_system_without_locks_still_makes_what_is_asked(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(*_):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    paths, from_cache = cache.lookup_or_make(cache.cache_key("no locks"), ("cubin",), lambda: {"cubin": b"made"},
                                             tmp_path)
    assert not from_cache and paths["cubin"].read_bytes() == b"made"
