"""harness/compiler/signature.py: a kernel's parameters read from PTX, and the check of a launch's arguments."""

import ctypes
import struct

import pytest
import torch

from harness.compiler.nvrtc import compile_cuda
from harness.compiler.signature import Kind, Param, check_arguments, is_pointer_type, kernel_params, to_ctypes

INT, FLOAT, AGG = Kind.INTEGER, Kind.FLOAT, Kind.AGGREGATE


def entry(*declarations, name="k"):
    return ".visible .entry " + name + "(\n\t" + ",\n\t".join(declarations) + "\n)\n{\n\tret;\n}\n"


class Half(ctypes.Structure):
    _fields_ = [("bits", ctypes.c_uint16)]


class Pair(ctypes.Structure):
    _fields_ = [("a", ctypes.c_float), ("b", ctypes.c_float)]


class Nine(ctypes.Structure):
    _fields_ = [("a", ctypes.c_double * 9)]


# --- kernel_params: literal PTX ------------------------------------------------------------------

@pytest.mark.parametrize("declaration, param", [
    (".param .u64 k_param_0", Param(0, INT, 8)),
    (".param .s64 k_param_0", Param(0, INT, 8)),
    (".param .u32 k_param_0", Param(0, INT, 4)),
    (".param .s32 k_param_0", Param(0, INT, 4)),
    (".param .b32 k_param_0", Param(0, INT, 4)),
    (".param .u16 k_param_0", Param(0, INT, 2)),
    (".param .u8 k_param_0", Param(0, INT, 1)),
    (".param .f32 k_param_0", Param(0, FLOAT, 4)),
    (".param .f64 k_param_0", Param(0, FLOAT, 8)),
    (".param .align 2 .b8 k_param_0[2]", Param(0, AGG, 2)),  # __half
    (".param .align 8 .b8 k_param_0[72]", Param(0, AGG, 72)),  # a struct of nine doubles
    (".param .align 16 .b32 k_param_0[4]", Param(0, AGG, 16)),
    (".param .u64 .ptr .global .align 4 k_param_0", Param(0, INT, 8)),
    (".param .u64 .ptr .align 1 k_param_0", Param(0, INT, 8)),
    (".param .u32 .ptr .const .align 8 k_param_0", Param(0, INT, 4)),
    (".param .u64 .ptr.global.align 16 k_param_0", Param(0, INT, 8)),
    (".param .u32 .ptr.align 16 k_param_0", Param(0, INT, 4)),
])
def test_kernel_params_reads_each_parameter_form(declaration, param):
    assert kernel_params(entry(declaration), "k") == [param]


def test_kernel_params_reads_a_whole_parameter_list_in_order():
    ptx = entry(
        ".param .u64 k_param_0",
        ".param .u64 .ptr .global .align 4 k_param_1",
        ".param .u32 k_param_2",
        ".param .f32 k_param_3",
        ".param .f64 k_param_4",
        ".param .align 2 .b8 k_param_5[2]",
        ".param .align 8 .b8 k_param_6[72]",
        ".param .s64 k_param_7",
    )
    assert kernel_params(ptx, "k") == [
        Param(0, INT, 8), Param(1, INT, 8), Param(2, INT, 4), Param(3, FLOAT, 4), Param(4, FLOAT, 8),
        Param(5, AGG, 2), Param(6, AGG, 72), Param(7, INT, 8),
    ]


def test_unspaced_pointer_attributes_do_not_shift_later_parameters():
    ptx = entry(".param .u32 a", ".param .u64 .ptr.global.align 16 b", ".param .f32 c", name="foo")
    assert kernel_params(ptx, "foo") == [Param(0, INT, 4), Param(1, INT, 8), Param(2, FLOAT, 4)]


def test_kernel_params_picks_the_named_entry_among_several():
    ptx = (
        ".version 8.5\n.target sm_90\n.address_size 64\n\n"
        + entry(".param .f64 first_param_0", name="first")
        + entry(".param .u32 k2_param_0", ".param .u32 k2_param_1", name="k2")
        + entry(".param .u64 k_param_0", ".param .f32 k_param_1", name="k")
    )
    assert kernel_params(ptx, "k") == [Param(0, INT, 8), Param(1, FLOAT, 4)]
    assert kernel_params(ptx, "k2") == [Param(0, INT, 4), Param(1, INT, 4)]
    assert kernel_params(ptx, "first") == [Param(0, FLOAT, 8)]


def test_kernel_without_parameters_has_an_empty_list():
    assert kernel_params(".visible .entry empty()\n{\n\tret;\n}\n", "empty") == []


@pytest.mark.parametrize("ptx, name", [
    (entry(".param .u32 k_param_0"), "missing"),
    (entry(".param .u32 k2_param_0", name="k2"), "k"),  # a prefix of an entry's name is not that entry
    (".visible .func (.param .b32 func_retval0) k(\n\t.param .b32 k_param_0\n)\n{\n\tret;\n}\n", "k"),
    ("", "k"),
])
def test_kernel_params_raises_key_error_for_a_missing_entry(ptx, name):
    with pytest.raises(KeyError) as raised:
        kernel_params(ptx, name)
    assert raised.value.args == (name,)


@pytest.mark.parametrize("param, text", [
    (Param(0, INT, 8), "an integer of 8 bytes"),
    (Param(3, FLOAT, 4), "a float of 4 bytes"),
    (Param(1, AGG, 72), "an aggregate of 72 bytes"),
])
def test_param_describe(param, text):
    assert param.describe() == text


# --- kernel_params: PTX from NVRTC ---------------------------------------------------------------

KERNEL_SOURCE = r"""
#include <cuda_fp16.h>
struct Nine { double a[9]; };
extern "C" __global__ void k(const float* __restrict__ x, float* y, int n, unsigned m, float a, double b,
                             __half h, Nine s, long long q) {
    if (threadIdx.x == 0) y[0] = x[0] + n + m + a + b + __half2float(h) + s.a[3] + q;
}
template <typename T> __global__ void scale(T* out, const T* in, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * factor;
}
template __global__ void scale<double>(double*, const double*, double, int);
"""


@pytest.fixture(scope="module")
def compiled_k():
    return compile_cuda(KERNEL_SOURCE, "k")


def test_kernel_params_of_an_nvrtc_compiled_kernel(compiled_k):
    assert compiled_k.lowered_name == "k"
    assert kernel_params(compiled_k.ptx, compiled_k.lowered_name) == [
        Param(0, INT, 8), Param(1, INT, 8), Param(2, INT, 4), Param(3, INT, 4), Param(4, FLOAT, 4),
        Param(5, FLOAT, 8), Param(6, AGG, 2), Param(7, AGG, 72), Param(8, INT, 8),
    ]


def test_kernel_params_of_a_mangled_template_kernel():
    compiled = compile_cuda(KERNEL_SOURCE, "scale<double>")
    assert compiled.lowered_name != "scale<double>"
    assert kernel_params(compiled.ptx, compiled.lowered_name) == [
        Param(0, INT, 8), Param(1, INT, 8), Param(2, FLOAT, 8), Param(3, INT, 4),
    ]


def test_a_correct_launch_of_the_compiled_kernel_passes_the_check(compiled_k):
    params = kernel_params(compiled_k.ptx, compiled_k.lowered_name)
    args = [
        (ctypes.c_void_p, 0x7F00_0000_0000), (ctypes.c_void_p, 0x7F00_0000_1000), (ctypes.c_int, -5),
        (ctypes.c_uint, 2**32 - 1), (ctypes.c_float, 1.5), (ctypes.c_double, 2.5), (Half, Half(0x3C00)),
        (Nine, Nine()), (ctypes.c_longlong, -(2**63)),
    ]
    assert check_arguments(params, args) == []


# --- check_arguments -----------------------------------------------------------------------------

@pytest.mark.parametrize("params, args, problems", [
    # argument count
    ([Param(0, INT, 8), Param(1, INT, 4)], [(ctypes.c_void_p, 4096)],
     ["launch passes 1 argument but the kernel takes 2"]),
    ([Param(0, INT, 4)], [(ctypes.c_int, 1), (ctypes.c_int, 2)],
     ["launch passes 2 arguments but the kernel takes 1"]),
    ([Param(0, INT, 4)], [], ["launch passes 0 arguments but the kernel takes 1"]),
    # integer where a float is expected, and the reverse
    ([Param(0, FLOAT, 4)], [(ctypes.c_int, 1)],
     ["argument 0: launch passes c_int (integer, 4 bytes) but kernel parameter 0 is a float of 4 bytes"]),
    ([Param(0, INT, 4)], [(ctypes.c_float, 1.0)],
     ["argument 0: launch passes c_float (float, 4 bytes) but kernel parameter 0 is an integer of 4 bytes"]),
    ([Param(0, FLOAT, 8)], [(ctypes.c_long, 1)],
     ["argument 0: launch passes c_long (integer, 8 bytes) but kernel parameter 0 is a float of 8 bytes"]),
    # size
    ([Param(0, INT, 4)], [(ctypes.c_long, 1)],
     ["argument 0: launch passes c_long (integer, 8 bytes) but kernel parameter 0 is an integer of 4 bytes"]),
    ([Param(0, FLOAT, 4)], [(ctypes.c_double, 1.0)],
     ["argument 0: launch passes c_double (float, 8 bytes) but kernel parameter 0 is a float of 4 bytes"]),
    ([Param(0, INT, 4)], [(ctypes.c_void_p, 4096)],
     ["argument 0: launch passes c_void_p (integer, 8 bytes) but kernel parameter 0 is an integer of 4 bytes"]),
    # structures
    ([Param(0, AGG, 72)], [(Pair, Pair(1.0, 2.0))],
     ["argument 0: launch passes Pair (aggregate, 8 bytes) but kernel parameter 0 is an aggregate of 72 bytes"]),
    ([Param(0, INT, 8)], [(Pair, Pair())],
     ["argument 0: launch passes Pair (aggregate, 8 bytes) but kernel parameter 0 is an integer of 8 bytes"]),
    ([Param(0, AGG, 2)], [(ctypes.c_uint16, 0x3C00)],
     ["argument 0: launch passes c_ushort (integer, 2 bytes) but kernel parameter 0 is an aggregate of 2 bytes"]),
    ([Param(0, AGG, 8)], [(Pair, (1.0, 2.0))],
     ["argument 0 (Pair): value (1.0, 2.0) is not an instance of Pair"]),
    # integer values out of range
    ([Param(0, INT, 4)], [(ctypes.c_uint, 2**32)],
     ["argument 0 (c_uint): value 4294967296 does not fit c_uint [0, 4294967295] (it would be truncated)"]),
    ([Param(0, INT, 4)], [(ctypes.c_uint, -1)],
     ["argument 0 (c_uint): value -1 does not fit c_uint [0, 4294967295] (it would be truncated)"]),
    ([Param(0, INT, 4)], [(ctypes.c_int, 2**31)],
     ["argument 0 (c_int): value 2147483648 does not fit c_int [-2147483648, 2147483647] (it would be truncated)"]),
    ([Param(0, INT, 4)], [(ctypes.c_int, -(2**31) - 1)],
     ["argument 0 (c_int): value -2147483649 does not fit c_int [-2147483648, 2147483647] (it would be truncated)"]),
    ([Param(0, INT, 1)], [(ctypes.c_ubyte, 256)],
     ["argument 0 (c_ubyte): value 256 does not fit c_ubyte [0, 255] (it would be truncated)"]),
    ([Param(0, INT, 1)], [(ctypes.c_bool, 2)],
     ["argument 0 (c_bool): value 2 does not fit c_bool [0, 1] (it would be truncated)"]),
    ([Param(0, INT, 8)], [(ctypes.c_long, 2**63)],
     ["argument 0 (c_long): value 9223372036854775808 does not fit c_long "
      "[-9223372036854775808, 9223372036854775807] (it would be truncated)"]),
    # integer type, non-integer value
    ([Param(0, INT, 4)], [(ctypes.c_int, 1.5)], ["argument 0 (c_int): value 1.5 is a float, not an int"]),
    ([Param(0, INT, 4)], [(ctypes.c_int, "3")], ["argument 0 (c_int): value '3' is a str, not an int"]),
    # pointers
    ([Param(0, INT, 8)], [(ctypes.c_void_p, 1.5)],
     ["argument 0 (c_void_p): value 1.5 is not a device address (an int from tensor.data_ptr())"]),
    ([Param(0, INT, 8)], [(ctypes.c_void_p, None)],
     ["argument 0 (c_void_p): value None is not a device address (an int from tensor.data_ptr())"]),
    ([Param(0, INT, 8)], [(ctypes.c_void_p, -1)],
     ["argument 0 (c_void_p): value -1 is not a device address (an int from tensor.data_ptr())"]),
    ([Param(0, INT, 8)], [(ctypes.c_void_p, 2**64)],
     ["argument 0 (c_void_p): value 18446744073709551616 is not a device address (an int from tensor.data_ptr())"]),
    ([Param(0, INT, 8)], [(ctypes.c_void_p, True)],
     ["argument 0 (c_void_p): value True is not a device address (an int from tensor.data_ptr())"]),
    ([Param(0, INT, 8)], [(ctypes.POINTER(ctypes.c_float), torch.zeros(2))],
     ["argument 0 (LP_c_float): value tensor([0., 0.]) is not a device address (an int from tensor.data_ptr())"]),
    # floats
    ([Param(0, FLOAT, 4)], [(ctypes.c_float, "1.0")], ["argument 0 (c_float): value '1.0' is not a number"]),
    ([Param(0, FLOAT, 8)], [(ctypes.c_double, True)], ["argument 0 (c_double): value True is not a number"]),
    # not a (type, value) pair
    ([Param(0, INT, 4)], [5], ["argument 0: 5 is not a (ctypes_type, value) pair"]),
    ([Param(0, INT, 4)], [(ctypes.c_int,)],
     ["argument 0: (<class 'ctypes.c_int'>,) is not a (ctypes_type, value) pair"]),
    ([Param(0, INT, 4)], [(ctypes.c_int, 1, 2)],
     ["argument 0: (<class 'ctypes.c_int'>, 1, 2) is not a (ctypes_type, value) pair"]),
    # not a ctypes type
    ([Param(0, INT, 4)], [(int, 3)], ["argument 0: <class 'int'> is not a ctypes scalar, pointer or structure type"]),
    ([Param(0, FLOAT, 4)], [("c_float", 3.0)],
     ["argument 0: 'c_float' is not a ctypes scalar, pointer or structure type"]),
    ([Param(0, INT, 4)], [(ctypes.c_int(3), 3)],
     ["argument 0: c_int(3) is not a ctypes scalar, pointer or structure type"]),
])
def test_check_arguments_problems(params, args, problems):
    assert check_arguments(params, args) == problems


@pytest.mark.parametrize("args, text", [
    ("x", "launch returned str for the argument list, not a list of (ctypes_type, value)"),
    (None, "launch returned NoneType for the argument list, not a list of (ctypes_type, value)"),
    ({0: (ctypes.c_int, 1)}, "launch returned dict for the argument list, not a list of (ctypes_type, value)"),
])
def test_check_arguments_of_something_not_a_list(args, text):
    assert check_arguments([Param(0, INT, 4)], args) == [text]


@pytest.mark.parametrize("params, args", [
    ([Param(0, INT, 4)], [(ctypes.c_uint, 2**32 - 1)]),
    ([Param(0, INT, 4)], [(ctypes.c_uint, 0)]),
    ([Param(0, INT, 4)], [(ctypes.c_int, -(2**31))]),
    ([Param(0, INT, 4)], [(ctypes.c_int, 2**31 - 1)]),
    ([Param(0, INT, 4)], [(ctypes.c_int32, 7)]),
    ([Param(0, INT, 8)], [(ctypes.c_uint64, 2**64 - 1)]),
    ([Param(0, INT, 8)], [(ctypes.c_size_t, 2**40)]),
    ([Param(0, INT, 1)], [(ctypes.c_bool, 1)]),
    ([Param(0, INT, 8)], [(ctypes.c_void_p, 0)]),
    ([Param(0, INT, 8)], [(ctypes.c_void_p, 2**64 - 1)]),
    ([Param(0, INT, 8)], [(ctypes.POINTER(ctypes.c_float), 4096)]),
    ([Param(0, FLOAT, 4)], [(ctypes.c_float, 3)]),  # an int is a number
    ([Param(0, FLOAT, 8)], [(ctypes.c_double, -0.5)]),
    ([Param(0, AGG, 2)], [(Half, Half(0x3C00))]),
    ([Param(0, AGG, 72)], [(Nine, Nine())]),
    ([Param(0, AGG, 8)], [(ctypes.c_float * 2, (ctypes.c_float * 2)(1.0, 2.0))]),
    ([Param(0, INT, 8), Param(1, FLOAT, 4)], ((ctypes.c_void_p, 16), [ctypes.c_float, 1.0])),  # tuple, list pair
])
def test_check_arguments_accepts_fitting_arguments(params, args):
    assert check_arguments(params, args) == []


def test_check_arguments_reports_every_problem_in_order():
    params = [Param(0, INT, 8), Param(1, INT, 4), Param(2, FLOAT, 4), Param(3, AGG, 72)]
    args = [(ctypes.c_void_p, 1.5), (ctypes.c_uint, 2**32), (ctypes.c_int, 1), (Nine, Nine()), (ctypes.c_int, 9)]
    assert check_arguments(params, args) == [
        "launch passes 5 arguments but the kernel takes 4",
        "argument 0 (c_void_p): value 1.5 is not a device address (an int from tensor.data_ptr())",
        "argument 1 (c_uint): value 4294967296 does not fit c_uint [0, 4294967295] (it would be truncated)",
        "argument 2: launch passes c_int (integer, 4 bytes) but kernel parameter 2 is a float of 4 bytes",
    ]


def test_an_argument_can_be_both_the_wrong_kind_and_a_bad_value():
    assert check_arguments([Param(0, INT, 4)], [(ctypes.c_double, "x")]) == [
        "argument 0: launch passes c_double (float, 8 bytes) but kernel parameter 0 is an integer of 4 bytes",
        "argument 0 (c_double): value 'x' is not a number",
    ]


@pytest.mark.parametrize("ctype, pointer", [
    (ctypes.c_void_p, True),
    (ctypes.c_char_p, True),
    (ctypes.POINTER(ctypes.c_int), True),
    (ctypes.c_int, False),
    (ctypes.c_size_t, False),
    (Pair, False),
    (int, False),
])
def test_is_pointer_type(ctype, pointer):
    assert is_pointer_type(ctype) is pointer


# --- to_ctypes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("arg, object_type, raw", [
    ((ctypes.c_int, -5), ctypes.c_int, struct.pack("<i", -5)),
    ((ctypes.c_uint, 2**32 - 1), ctypes.c_uint, struct.pack("<I", 2**32 - 1)),
    ((ctypes.c_ubyte, 200), ctypes.c_ubyte, bytes([200])),
    ((ctypes.c_longlong, -(2**63)), ctypes.c_longlong, struct.pack("<q", -(2**63))),
    ((ctypes.c_float, 1.5), ctypes.c_float, struct.pack("<f", 1.5)),
    ((ctypes.c_float, 3), ctypes.c_float, struct.pack("<f", 3.0)),
    ((ctypes.c_double, -0.0), ctypes.c_double, struct.pack("<d", -0.0)),
    ((ctypes.c_void_p, 0x7F00_0000_1000), ctypes.c_void_p, struct.pack("<Q", 0x7F00_0000_1000)),
    ((ctypes.POINTER(ctypes.c_float), 4096), ctypes.c_void_p, struct.pack("<Q", 4096)),
    ((Half, Half(0x3C00)), Half, struct.pack("<H", 0x3C00)),
    ((Pair, Pair(1.0, 2.0)), Pair, struct.pack("<ff", 1.0, 2.0)),
])
def test_to_ctypes_builds_objects_with_the_right_bytes(arg, object_type, raw):
    (obj,) = to_ctypes([arg])
    assert type(obj) is object_type
    assert bytes(obj) == raw


def test_to_ctypes_passes_ctypes_instances_through_and_keeps_order():
    half, count = Half(0x3C00), ctypes.c_int(4)
    objects = to_ctypes([(ctypes.c_void_p, 16), (Half, half), (ctypes.c_int, count), (ctypes.c_float, 0.5)])
    assert [type(o) for o in objects] == [ctypes.c_void_p, Half, ctypes.c_int, ctypes.c_float]
    assert objects[1] is half and objects[2] is count
    assert objects[0].value == 16 and objects[3].value == 0.5


@pytest.mark.parametrize("source, uses", [
    ('extern "C" __global__ void k(float* o) { o[threadIdx.x] = 1.0f; }', False),
    ('extern "C" __global__ void k(float* o) { __shared__ float s[32]; s[threadIdx.x] = o[threadIdx.x]; '
     '__syncthreads(); o[threadIdx.x] = s[31 - threadIdx.x]; }', True),
    ('extern "C" __global__ void k(float* o) { extern __shared__ float s[]; s[threadIdx.x] = 1.0f; '
     'o[threadIdx.x] = s[0]; }', True),
])
def test_shared_memory_is_seen_in_the_ptx_however_it_is_declared(source, uses):
    from harness.compiler.signature import uses_shared_memory

    assert uses_shared_memory(compile_cuda(source, "k", "sm_90").ptx) is uses


def test_shared_memory_in_any_state_space_spelling_counts():
    from harness.compiler.signature import uses_shared_memory

    assert uses_shared_memory("\tld.shared::cta.u32 %r1, [%r2];")
    assert uses_shared_memory("\tcvta.shared.u64 %rd1, %rd2;")
    assert not uses_shared_memory("\tld.global.nc.f32 %f1, [%rd1];  // .sharedness is no word of PTX")
