// _tpusim: the runtime (sw/runtime/client.h) as a Python extension module.
//
//   import _tpusim, numpy as np
//   client = _tpusim.Client("model", "tiny")
//   x = client.buffer_from_numpy(np.ones((4, 8), np.float32))
//   exe = client.compile(hlo_text)
//   outputs, counters = exe.execute([x])
//   outputs, counters, profile = exe.execute([x], profile=True)   # where the cycles went (sw/profiler)
//   outputs[0].to_numpy()
//   _tpusim.interpret(hlo_text, [np.ones((4, 8), np.float32)])   # the HLO interpreter (the golden)
//   exe = client.compile_sharded(shard_map_hlo_text)              # a global view over several devices
//   g = client.buffer_from_global(x, exe.parameter_layouts[0]); outputs, counters = exe.execute([g])
//
// Arrays cross as NumPy arrays of float32, bfloat16 (ml_dtypes), int32, uint32 or bool; other dtypes get
// the runtime's error. Every runtime error becomes a Python exception named after its code
// (ResourceExhaustedError, NotFoundError, ...; all derive from TpuError) whose text is the runtime's
// message. Long calls (compile, execute, transfers) release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/program.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/shape.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/per_device_program.h"
#include "sw/base/file.h"
#include "sw/base/status.h"
#include "sw/profiler/html_report.h"
#include "sw/profiler/op_profile.h"
#include "sw/profiler/trace_writer.h"
#include "sw/runtime/client.h"
#include "sw/runtime/sharded.h"

namespace py = pybind11;

namespace tpu::runtime {
namespace {

// Python exception classes, one per StatusCode, created at module import.
std::map<StatusCode, py::object>& ExceptionClasses() {
  static auto* classes = new std::map<StatusCode, py::object>();
  return *classes;
}

[[noreturn]] void Raise(const Status& status) {
  auto it = ExceptionClasses().find(status.code());
  PyErr_SetString(it != ExceptionClasses().end() ? it->second.ptr() : PyExc_RuntimeError, status.message().c_str());
  throw py::error_already_set();
}

void ThrowIfError(const Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T ValueOrThrow(StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return std::move(*value);
}

// NumPy dtype names (bfloat16 is ml_dtypes', the type JAX uses) and the element types they carry.
const std::vector<std::pair<std::string, hlo::PrimitiveType>>& DtypeNames() {
  static const auto* names = new std::vector<std::pair<std::string, hlo::PrimitiveType>>{
      {"float32", hlo::PrimitiveType::F32}, {"bfloat16", hlo::PrimitiveType::BF16},
      {"int32", hlo::PrimitiveType::S32},   {"uint32", hlo::PrimitiveType::U32},
      {"bool", hlo::PrimitiveType::PRED},   {"float16", hlo::PrimitiveType::F16},
      {"float64", hlo::PrimitiveType::F64}, {"int8", hlo::PrimitiveType::S8},
      {"int16", hlo::PrimitiveType::S16},   {"int64", hlo::PrimitiveType::S64},
      {"uint8", hlo::PrimitiveType::U8},    {"uint16", hlo::PrimitiveType::U16},
      {"uint64", hlo::PrimitiveType::U64}};
  return *names;
}

std::string DtypeName(const py::dtype& dtype) { return py::str(dtype.attr("name")).cast<std::string>(); }

hlo::PrimitiveType ElementTypeOf(const py::dtype& dtype) {
  const std::string name = DtypeName(dtype);
  for (const auto& [dtype_name, type] : DtypeNames()) {
    if (dtype_name == name) return type;
  }
  Raise(Status(StatusCode::kTypeError, "DataType " + name + " has no TPU element type"));
}

py::dtype DtypeOf(hlo::PrimitiveType type) {
  for (const auto& [dtype_name, element_type] : DtypeNames()) {
    if (element_type != type) continue;
    if (type == hlo::PrimitiveType::BF16) return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    return py::dtype(dtype_name);
  }
  Raise(Unimplemented(std::string("element type ") + hlo::PrimitiveTypeName(type) + " has no NumPy dtype"));
}

hlo::Literal LiteralFromNumpy(const py::array& input) {
  hlo::PrimitiveType type = ElementTypeOf(input.dtype());
  // A C-contiguous copy when the array is strided or not aligned; row-major, as Literal stores it.
  py::array array = py::array::ensure(input, py::array::c_style);
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  hlo::Literal literal(hlo::Shape::Make(type, dims));
  if (literal.size_bytes() != array.nbytes()) {
    Raise(Internal("element size of " + DtypeName(array.dtype()) + " differs from the runtime's (" + std::to_string(literal.size_bytes()) + " vs " + std::to_string(array.nbytes()) + " bytes)"));
  }
  if (literal.size_bytes() > 0) std::memcpy(literal.untyped_data(), array.data(), array.nbytes());
  return literal;
}

py::array NumpyFromLiteral(const hlo::Literal& literal) {
  if (literal.IsTuple()) Raise(InvalidArgument("a tuple value has no NumPy form"));
  std::vector<py::ssize_t> dims(literal.shape().dimensions.begin(), literal.shape().dimensions.end());
  py::array array(DtypeOf(literal.shape().element_type), dims);
  if (literal.size_bytes() > 0) std::memcpy(array.mutable_data(), literal.untyped_data(), literal.size_bytes());
  return array;
}

// A profiled run, for Python: the program, its issue trace and the per-operation sums.
struct ProfiledRun {
  compiler::Program program;
  std::shared_ptr<const ExecutionProfile> execution;
  std::string device_name;
  profiler::OpProfile ops;
};

py::dict CountersToDict(const ExecuteResult& result) {
  const DeviceCounters& counters = result.counters;
  py::dict out;
  out["feed_stall_cycles"] = counters.feed_stall_cycles;
  out["elapsed_cycles"] = result.elapsed_cycles;  // with the launch and the host link's transfers
  out["infeed_values"] = result.infeed_values;
  out["outfeed_values"] = result.outfeed_values;
  out["cycles"] = counters.cycles;
  out["mxu_busy_cycles"] = counters.mxu_busy_cycles;
  out["instructions"] = counters.instructions;
  out["dma_lines"] = counters.dma_lines;
  out["vpu_busy_cycles"] = counters.vpu_busy_cycles;
  out["stall_cycles"] = counters.stall_cycles;
  return out;
}

// A ShardLayout as Python sees it: a dict of 'axes' (per dimension, the mesh axes splitting it), 'pieces'
// (per dimension) and 'device_blocks' ([device][dimension]: which block the device holds).
py::dict LayoutToDict(const compiler::ShardLayout& layout) {
  py::dict entry;
  entry["axes"] = layout.axes;
  entry["pieces"] = layout.pieces;
  entry["device_blocks"] = layout.device_blocks;
  return entry;
}

py::list LayoutsToList(const std::vector<compiler::ShardLayout>& layouts) {
  py::list list;
  for (const compiler::ShardLayout& layout : layouts) list.append(LayoutToDict(layout));
  return list;
}

compiler::ShardLayout LayoutFromDict(const py::dict& entry) {
  compiler::ShardLayout layout;
  try {
    layout.axes = entry["axes"].cast<std::vector<std::vector<std::string>>>();
    layout.pieces = entry["pieces"].cast<std::vector<int64_t>>();
    layout.device_blocks = entry["device_blocks"].cast<std::vector<std::vector<int64_t>>>();
  } catch (const py::error_already_set&) {
    Raise(InvalidArgument("a layout is a dict of 'axes', 'pieces' and 'device_blocks'"));
  } catch (const py::cast_error&) {
    Raise(InvalidArgument("a layout is a dict of 'axes' (lists of names), 'pieces' (integers) and "
                          "'device_blocks' (lists of integers)"));
  }
  return layout;
}

py::tuple ShapeTuple(const hlo::Shape& shape) {
  return py::tuple(py::cast(std::vector<int64_t>(shape.dimensions.begin(), shape.dimensions.end())));
}

}  // namespace

// Ctrl-C while the device runs a program: Python runs its SIGINT handler only when the call returns,
// which for a long simulation looks like an ignored Ctrl-C. While a program runs, a C handler answers at
// once on stderr and remembers the request; when the call returns, the request is handed to Python
// (PyErr_SetInterrupt), whose handler decides (the trainer finishes the step, then stops). A second Ctrl-C
// during the same program exits at once with status 130, as the libtpu runtime does. Main thread only:
// elsewhere signals stay as they are.
class InterruptWhileRunning {
 public:
  InterruptWhileRunning() {
    if (!IsMainThread()) return;
    requested_ = 0;
    struct sigaction action {};
    action.sa_handler = &OnInterrupt;
    sigemptyset(&action.sa_mask);
    installed_ = sigaction(SIGINT, &action, &previous_) == 0;
  }
  ~InterruptWhileRunning() {
    if (!installed_) return;
    sigaction(SIGINT, &previous_, nullptr);
    if (requested_) PyErr_SetInterrupt();
  }
  InterruptWhileRunning(const InterruptWhileRunning&) = delete;
  InterruptWhileRunning& operator=(const InterruptWhileRunning&) = delete;

 private:
  static bool IsMainThread() { return getpid() == static_cast<pid_t>(gettid()); }
  static void OnInterrupt(int) {
    if (requested_) {
      static const char kNow[] = "\nInterrupted again: exiting now\n";
      (void)!write(STDERR_FILENO, kNow, sizeof(kNow) - 1);
      _exit(130);
    }
    requested_ = 1;
    static const char kAck[] = "\nInterrupt received: finishing the program the device is running (with "
                               "steps_per_execution: the current loop); Ctrl-C again exits now\n";
    (void)!write(STDERR_FILENO, kAck, sizeof(kAck) - 1);
  }

  static inline volatile std::sig_atomic_t requested_ = 0;
  struct sigaction previous_ {};
  bool installed_ = false;
};

PYBIND11_MODULE(_tpusim, m) {
  m.doc() = "tpusim runtime: clients, devices, HBM buffers, compiled executables";

  // TpuError and one subclass per status code; TypeError and ValueError also derive from Python's own.
  py::object base = py::reinterpret_steal<py::object>(
      PyErr_NewException("_tpusim.TpuError", PyExc_RuntimeError, nullptr));
  m.attr("TpuError") = base;
  for (StatusCode code : {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kResourceExhausted,
                          StatusCode::kDeadlineExceeded, StatusCode::kFailedPrecondition, StatusCode::kUnimplemented,
                          StatusCode::kInternal, StatusCode::kAborted, StatusCode::kOutOfRange, StatusCode::kTypeError,
                          StatusCode::kValueError}) {
    const std::string name = StatusCodeName(code);
    py::tuple bases = py::make_tuple(base);
    if (code == StatusCode::kTypeError) bases = py::make_tuple(base, py::handle(PyExc_TypeError));
    if (code == StatusCode::kValueError) bases = py::make_tuple(base, py::handle(PyExc_ValueError));
    py::object cls = py::reinterpret_steal<py::object>(
        PyErr_NewException(("_tpusim." + name).c_str(), bases.ptr(), nullptr));
    m.attr(name.c_str()) = cls;
    ExceptionClasses()[code] = cls;
  }

  // The chip's clock in every configuration (sysc/platform.h: a 1 ns period), for device time.
  m.attr("CLOCK_HZ") = 1.0e9;

  m.def(
      "interpret",
      [](const std::string& hlo_text, const std::vector<py::array>& arguments) {
        std::vector<hlo::Literal> literals;
        for (const py::array& argument : arguments) literals.push_back(LiteralFromNumpy(argument));
        StatusOr<std::vector<hlo::Literal>> outputs = [&]() -> StatusOr<std::vector<hlo::Literal>> {
          py::gil_scoped_release release;
          TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(hlo_text));
          TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
          return hlo::Interpret(*module, literals);
        }();
        py::list result;
        for (const hlo::Literal& output : ValueOrThrow(std::move(outputs))) result.append(NumpyFromLiteral(output));
        return result;
      },
      py::arg("hlo_text"), py::arg("arguments"),
      "Runs an HLO module on the host with the project's interpreter; returns its outputs (tuple flattened).");

  m.def(
      "interpret_replicated",
      [](const std::string& hlo_text, const std::vector<std::vector<py::array>>& arguments) {
        std::vector<std::vector<hlo::Literal>> literals;
        for (const auto& device_arguments : arguments) {
          literals.emplace_back();
          for (const py::array& argument : device_arguments) literals.back().push_back(LiteralFromNumpy(argument));
        }
        StatusOr<std::vector<std::vector<hlo::Literal>>> outputs = [&]() -> StatusOr<std::vector<std::vector<hlo::Literal>>> {
          py::gil_scoped_release release;
          TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(hlo_text));
          TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
          return hlo::InterpretReplicated(*module, literals);
        }();
        py::list result;
        for (const auto& device_outputs : ValueOrThrow(std::move(outputs))) {
          py::list device_result;
          for (const hlo::Literal& output : device_outputs) device_result.append(NumpyFromLiteral(output));
          result.append(device_result);
        }
        return result;
      },
      py::arg("hlo_text"), py::arg("arguments"),
      "Runs an HLO module on every device of its grid (replica_count x num_partitions, or one replica per "
      "argument list) with the project's interpreter; arguments and the result hold one list per device.");

  m.def(
      "per_device_program",
      [](const std::string& hlo_text) {
        compiler::PerDeviceProgram pass;
        StatusOr<std::string> text = [&]() -> StatusOr<std::string> {
          py::gil_scoped_release release;
          TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(hlo_text));
          TPU_ASSIGN_OR_RETURN(bool changed, pass.Run(module.get()));
          if (changed) TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
          return hlo::PrintHloModule(*module);
        }();
        std::string program = ValueOrThrow(std::move(text));
        return py::make_tuple(program, LayoutsToList(pass.parameter_layouts()), LayoutsToList(pass.result_layouts()));
      },
      py::arg("hlo_text"),
      "Turns the global-view module JAX lowers pmap / shard_map to (`.lower(...).as_text('hlo')`) into the "
      "program every device runs (compiler/passes/per_device_program.h). Returns (hlo_text, parameters, "
      "results): one layout per entry parameter and per result, a dict of 'axes' (per dimension, the mesh "
      "axes splitting it), 'pieces' (per dimension) and 'device_blocks' ([device][dimension]: which block the "
      "device holds). A module without Shardy's custom calls comes back as it is, with no layouts.");

  py::class_<Device>(m, "Device")
      .def_readonly("id", &Device::id)
      .def_readonly("core", &Device::core)
      .def_readonly("worker", &Device::worker)
      .def_readonly("kind", &Device::kind)
      .def_property_readonly("name", &Device::name)
      .def_property_readonly("full_name", &Device::full_name)
      .def("__repr__", &Device::ToString);

  py::class_<Buffer>(m, "Buffer")
      .def_property_readonly("shape",
                             [](const Buffer& b) {
                               const auto& dims = b.shape().dimensions;
                               return py::tuple(py::cast(std::vector<int64_t>(dims.begin(), dims.end())));
                             })
      .def_property_readonly("dtype", [](const Buffer& b) { return DtypeOf(b.shape().element_type); })
      .def_property_readonly("element_type",
                             [](const Buffer& b) { return std::string(hlo::PrimitiveTypeName(b.shape().element_type)); })
      .def_property_readonly("device", &Buffer::device, py::return_value_policy::reference_internal)
      .def_property_readonly("is_donated", &Buffer::is_donated)
      .def_property_readonly("hbm_lines", &Buffer::hbm_lines)
      .def("to_numpy",
           [](const Buffer& b) {
             StatusOr<hlo::Literal> literal = [&] {
               py::gil_scoped_release release;
               return b.ToLiteral();
             }();
             return NumpyFromLiteral(ValueOrThrow(std::move(literal)));
           })
      .def("__repr__", [](const Buffer& b) {
        return "<_tpusim.Buffer " + b.shape().ToString() + " on " + b.device().name() +
               (b.is_donated() ? " (donated)>" : ">");
      });

  py::class_<LoadedExecutable>(m, "Executable")
      .def_property_readonly("name", &LoadedExecutable::name)
      .def_property_readonly("instruction_words",
                             [](const LoadedExecutable& e) { return e.program().code.size(); })
      .def_property_readonly(
          "hbm_bytes",
          [](const LoadedExecutable& e) {
            return compiler::ProgramHbmLines(e.program()) * compiler::LineBytes(e.program().lanes);
          },
          "HBM the program needs on its device: parameters, outputs of their own, constants, temporaries.")
      .def_property_readonly(
          "code_ranges",
          [](const LoadedExecutable& e) {
            py::list ranges;
            for (const compiler::CodeRange& r : e.program().code_ranges) ranges.append(py::make_tuple(r.what, r.begin, r.end));
            return ranges;
          },
          "(what, begin, end) per step of the program: the instruction words [begin, end) an HLO operation "
          "(\"dot.3 = f32[32,120] dot\") or a final copy compiled to, in program order.")
      .def_property_readonly("mxu_macs", [](const LoadedExecutable& e) { return e.program().mxu_macs; },
                             "MACs of the padded tiles the MXU computes")
      .def_property_readonly("logical_macs", [](const LoadedExecutable& e) { return e.program().logical_macs; },
                             "MACs of the dots as the HLO writes them")
      .def(
          "execute",
          [](LoadedExecutable& e, const std::vector<const Buffer*>& arguments, bool profile) -> py::tuple {
            ExecuteOptions options;
            options.profile = profile;
            StatusOr<ExecuteResult> result = [&] {
              InterruptWhileRunning acknowledge;
              py::gil_scoped_release release;
              return e.Execute(arguments, options);
            }();
            ExecuteResult value = ValueOrThrow(std::move(result));
            py::list outputs;
            for (auto& output : value.outputs) outputs.append(py::cast(std::move(output)));
            if (!profile) return py::make_tuple(outputs, CountersToDict(value));
            auto run = std::make_unique<ProfiledRun>();
            run->program = e.program();
            run->execution = value.profile;
            run->device_name = e.device().name();
            run->ops = ValueOrThrow(profiler::BuildOpProfile(run->program, *run->execution,
                                                             profiler::PeaksOf(e.device_info())));
            return py::make_tuple(outputs, CountersToDict(value), std::move(run));
          },
          py::arg("arguments"), py::arg("profile") = false,
          "Runs the program once; returns (outputs, counters), and with profile=True (outputs, counters, "
          "Profile): the chip's issue trace of the run per HLO operation. Outputs aliased to a parameter "
          "take over that argument's HBM (the argument becomes donated).");

  py::class_<ReplicatedExecutable>(m, "ReplicatedExecutable",
                                   "One program loaded on several devices, run on all of them at once.")
      .def_property_readonly("name", &ReplicatedExecutable::name)
      .def_property_readonly("num_devices", &ReplicatedExecutable::num_devices)
      .def_property_readonly(
          "devices",
          [](const ReplicatedExecutable& e) {
            py::list devices;
            for (size_t i = 0; i < e.num_devices(); ++i) devices.append(e.device(i).name());
            return devices;
          },
          "The device names, in position order (position i is device i of the module's grid).")
      .def(
          "execute",
          [](ReplicatedExecutable& e, const std::vector<std::vector<const Buffer*>>& arguments) {
            StatusOr<std::vector<ExecuteResult>> results = [&] {
              InterruptWhileRunning acknowledge;
              py::gil_scoped_release release;
              return e.Execute(arguments);
            }();
            py::list per_device;
            for (ExecuteResult& result : ValueOrThrow(std::move(results))) {
              py::list outputs;
              for (auto& output : result.outputs) outputs.append(py::cast(std::move(output)));
              per_device.append(py::make_tuple(outputs, CountersToDict(result)));
            }
            return per_device;
          },
          py::arg("arguments"),
          "Runs the program on every device at once, device i on arguments[i] (a list of buffers on that "
          "device). Returns one (outputs, counters) per device. A failure names its device (\"replica 1 "
          "(TPU:1): ...\") and resets every device of the execution.");

  py::class_<ShardedBuffer>(m, "ShardedBuffer",
                            "A global array in HBM as one part per device, cut by its layout (sw/runtime/sharded.h).")
      .def_property_readonly("shape", [](const ShardedBuffer& b) { return ShapeTuple(b.shape()); },
                             "The global shape.")
      .def_property_readonly("dtype", [](const ShardedBuffer& b) { return DtypeOf(b.shape().element_type); })
      .def_property_readonly("element_type",
                             [](const ShardedBuffer& b) { return std::string(hlo::PrimitiveTypeName(b.shape().element_type)); })
      .def_property_readonly("layout", [](const ShardedBuffer& b) { return LayoutToDict(b.layout()); })
      .def_property_readonly(
          "parts",
          [](py::object self) {
            const ShardedBuffer& b = self.cast<const ShardedBuffer&>();
            py::list parts;
            for (size_t d = 0; d < b.num_parts(); ++d) {
              parts.append(py::cast(&b.part(d), py::return_value_policy::reference_internal, self));
            }
            return parts;
          },
          "Each device's part (a Buffer), in device order.")
      .def_property_readonly("is_donated", &ShardedBuffer::is_donated)
      .def_property_readonly("is_replicated", &ShardedBuffer::is_replicated,
                             "True when every device holds the whole array.")
      .def(
          "to_numpy",
          [](const ShardedBuffer& b) {
            StatusOr<hlo::Literal> literal = [&] {
              py::gil_scoped_release release;
              return b.ToLiteral();
            }();
            return NumpyFromLiteral(ValueOrThrow(std::move(literal)));
          },
          "The global array, each block read from the first device that holds it.")
      .def(
          "part_values",
          [](const ShardedBuffer& b) {
            StatusOr<std::vector<hlo::Literal>> literals = [&] {
              py::gil_scoped_release release;
              return b.PartLiterals();
            }();
            py::list values;
            for (const hlo::Literal& literal : ValueOrThrow(std::move(literals))) values.append(NumpyFromLiteral(literal));
            return values;
          },
          "Every device's part as a NumPy array, in device order (replicas of a block included).")
      .def("__repr__", [](const ShardedBuffer& b) {
        return "<_tpusim.ShardedBuffer " + b.shape().ToString() + " cut " + b.layout().ToString() + " over " +
               std::to_string(b.num_parts()) + " devices" + (b.is_donated() ? " (donated)>" : ">");
      });

  py::class_<ShardedExecutable>(m, "ShardedExecutable",
                                "The per-device program of a global-view module (shard_map, pmap) on the devices of "
                                "its mesh, taking and returning global arrays (ShardedBuffer).")
      .def_property_readonly("name", &ShardedExecutable::name)
      .def_property_readonly("num_devices", &ShardedExecutable::num_devices)
      .def_property_readonly("devices", &ShardedExecutable::device_ids,
                             "The client's device indices, position d running device d of the mesh.")
      .def_property_readonly("parameter_layouts",
                             [](const ShardedExecutable& e) { return LayoutsToList(e.parameter_layouts()); })
      .def_property_readonly("result_layouts",
                             [](const ShardedExecutable& e) { return LayoutsToList(e.result_layouts()); })
      .def_property_readonly("parameter_shapes",
                             [](const ShardedExecutable& e) {
                               py::list shapes;
                               for (const hlo::Shape& shape : e.parameter_shapes()) shapes.append(ShapeTuple(shape));
                               return shapes;
                             })
      .def_property_readonly(
          "instruction_words",
          [](const ShardedExecutable& e) { return e.replicated().executable(0).program().code.size(); })
      .def(
          "execute",
          [](ShardedExecutable& e, const std::vector<const ShardedBuffer*>& arguments) {
            StatusOr<ShardedExecuteResult> result = [&] {
              InterruptWhileRunning acknowledge;
              py::gil_scoped_release release;
              return e.Execute(arguments);
            }();
            ShardedExecuteResult value = ValueOrThrow(std::move(result));
            py::list outputs;
            for (auto& output : value.outputs) outputs.append(py::cast(std::move(output)));
            py::list devices;
            for (const ExecuteResult& run : value.devices) devices.append(CountersToDict(run));
            py::dict counters;
            counters["cycles"] = value.cycles;
            counters["elapsed_cycles"] = value.elapsed_cycles;
            counters["devices"] = devices;
            return py::make_tuple(outputs, counters);
          },
          py::arg("arguments"),
          "Runs the program on every device of the mesh at once; arguments and outputs are ShardedBuffers. "
          "Returns (outputs, counters): counters['cycles'] and ['elapsed_cycles'] of the slowest device, "
          "counters['devices'] each device's counters.");

  py::class_<ProfiledRun>(m, "Profile",
                          "A profiled run: cycles, stalls and unit work per HLO operation (sw/profiler).")
      .def_property_readonly("cycles", [](const ProfiledRun& p) { return p.ops.cycles; })
      .def_property_readonly(
          "start_cycle", [](const ProfiledRun& p) { return p.execution->start_cycle; },
          "The backend's clock at the run's first cycle (rtl: platform cycles; FST time = cycle * 1000 ps).")
      .def_property_readonly(
          "ops",
          [](const ProfiledRun& p) {
            py::list ops;
            for (const profiler::OpRecord& op : p.ops.ops) {
              py::dict d;
              d["name"] = op.name;
              d["category"] = op.category;
              d["start_cycle"] = op.start_cycle;
              d["cycles"] = op.cycles;
              d["stall_cycles"] = op.stall_cycles;
              d["instructions"] = op.instructions;
              d["dma_lines"] = op.work[kProfileDma];
              d["mxu_rows"] = op.work[kProfileMxu];
              d["vpu_lines"] = op.work[kProfileVpu];
              ops.append(d);
            }
            return ops;
          },
          "One dict per HLO operation in program order: name, category, start_cycle, cycles, stall_cycles, "
          "instructions, dma_lines, mxu_rows, vpu_lines.")
      .def("op_table", [](const ProfiledRun& p, size_t top) { return profiler::FormatOpProfile(p.ops, top); },
           py::arg("top") = 20, "The op profile as tpusim profile prints it (the `top` slowest, 0: all).")
      .def(
          "findings",
          [](const ProfiledRun& p, const std::string& hlo_text) {
            std::unique_ptr<hlo::HloModule> module = ValueOrThrow(hlo::ParseHloModule(hlo_text));
            py::list findings;
            for (const profiler::Finding& f : profiler::PerformanceFindings(*module, p.ops)) {
              findings.append(py::make_tuple(f.check, f.text));
            }
            return findings;
          },
          py::arg("hlo_text"), "The performance guide's checks on the module as written: (check, text) pairs.")
      .def(
          "write_trace",
          [](const ProfiledRun& p, const std::string& path) {
            profiler::TraceOptions options;
            options.device_name = p.device_name;
            ThrowIfError(WriteTextFile(path, profiler::ChromeTraceJson(p.ops, *p.execution, {}, options)));
          },
          py::arg("path"), "Writes the Chrome trace event JSON (Perfetto, chrome://tracing).")
      .def(
          "write_report",
          [](const ProfiledRun& p, const std::string& path, const std::string& hlo_text, const std::string& title,
             const std::string& subtitle) {
            std::unique_ptr<hlo::HloModule> module = ValueOrThrow(hlo::ParseHloModule(hlo_text));
            profiler::HtmlReportOptions options;
            options.title = title;
            options.subtitle = subtitle;
            ThrowIfError(WriteTextFile(
                path, profiler::HtmlReport(p.ops, *p.execution, profiler::PerformanceFindings(*module, p.ops), options)));
          },
          py::arg("path"), py::arg("hlo_text"), py::arg("title") = "", py::arg("subtitle") = "",
          "Writes the HTML report (utilization timeline, findings on hlo_text, op table).");

  py::class_<Client>(m, "Client")
      .def(py::init([](const std::string& backend, const std::string& config, uint64_t execute_timeout_cycles,
                       const std::string& trace_file, uint64_t trace_start_cycle, uint64_t trace_stop_cycle,
                       const std::string& compile_dump_dir, int dot_passes, uint32_t chips) {
             ClientOptions options;
             options.chips = chips;
             options.execute_timeout_cycles = execute_timeout_cycles;
             options.trace_file = trace_file;
             options.trace_start_cycle = trace_start_cycle;
             options.trace_stop_cycle = trace_stop_cycle;
             options.compile_dump_dir = compile_dump_dir;
             options.dot_passes = dot_passes;
             return ValueOrThrow(Client::Create(backend, config, options));
           }),
           py::arg("backend") = "model", py::arg("config") = "tiny",
           py::arg("execute_timeout_cycles") = ClientOptions().execute_timeout_cycles, py::arg("trace_file") = "",
           py::arg("trace_start_cycle") = 0, py::arg("trace_stop_cycle") = 0, py::arg("compile_dump_dir") = "", py::arg("dot_passes") = 0,
           py::arg("chips") = 0,
           "backend: 'model' or 'rtl'; config: a file rtl/config/<config>.cfg (rtl: the build's only). "
           "chips: a board of 1, 2 or 4 chips, a device per core (0: the configuration's BOARD_CHIPS). "
           "trace_file: FST waveform of the rtl backend, cycles trace_start_cycle..trace_stop_cycle (0: the end). "
           "dot_passes: MXU passes per f32 dot (0: each dot's precision, DEFAULT 1, HIGH 3, HIGHEST 6; or 1, 3, 6 for every dot).")
      .def_property_readonly("backend", &Client::backend)
      .def_property_readonly("devices", &Client::devices, py::return_value_policy::reference_internal)
      .def_property_readonly("lanes", [](const Client& c) { return c.device_info().lanes; })
      // HBM of device 0 (every device has the same size).
      .def_property_readonly("hbm_used_bytes", [](const Client& c) { return c.hbm_used_bytes(); })
      .def_property_readonly("hbm_limit_bytes", [](const Client& c) { return c.hbm_limit_bytes(); })
      .def(
          "buffer_from_numpy",
          [](Client& c, const py::array& array, int device) {
            hlo::Literal literal = LiteralFromNumpy(array);
            StatusOr<std::unique_ptr<Buffer>> buffer = [&] {
              py::gil_scoped_release release;
              return c.BufferFromHostLiteral(literal, device);
            }();
            return ValueOrThrow(std::move(buffer));
          },
          py::arg("array"), py::arg("device") = 0)
      .def(
          "compile",
          [](Client& c, const std::string& hlo_text, int device) {
            StatusOr<std::unique_ptr<LoadedExecutable>> executable = [&] {
              py::gil_scoped_release release;
              return c.Compile(hlo_text, device);
            }();
            return ValueOrThrow(std::move(executable));
          },
          py::arg("hlo_text"), py::arg("device") = 0)
      .def(
          "compile_replicated",
          [](Client& c, const std::string& hlo_text, const std::vector<int>& devices) {
            StatusOr<std::unique_ptr<ReplicatedExecutable>> executable = [&] {
              py::gil_scoped_release release;
              return c.CompileReplicated(hlo_text, devices);
            }();
            return ValueOrThrow(std::move(executable));
          },
          py::arg("hlo_text"), py::arg("devices") = std::vector<int>{},
          "Compiles once and loads the program on each listed device (default: as many as the module's "
          "replica_count x num_partitions, from device 0).")
      .def(
          "compile_sharded",
          [](Client& c, const std::string& hlo_text, const std::vector<int>& devices) {
            StatusOr<std::unique_ptr<ShardedExecutable>> executable = [&] {
              py::gil_scoped_release release;
              return c.CompileSharded(hlo_text, devices);
            }();
            return ValueOrThrow(std::move(executable));
          },
          py::arg("hlo_text"), py::arg("devices") = std::vector<int>{},
          "Compiles the global view JAX lowers shard_map / pmap to (`.lower(...).as_text('hlo')`) into the "
          "program every device runs and loads it on the devices of its mesh (default: from device 0).")
      .def(
          "buffer_from_global",
          [](Client& c, const py::array& array, const py::dict& layout, const std::vector<int>& devices) {
            hlo::Literal literal = LiteralFromNumpy(array);
            compiler::ShardLayout shard_layout = LayoutFromDict(layout);
            StatusOr<std::unique_ptr<ShardedBuffer>> buffer = [&] {
              py::gil_scoped_release release;
              return c.BufferFromGlobalLiteral(literal, shard_layout, devices);
            }();
            return ValueOrThrow(std::move(buffer));
          },
          py::arg("array"), py::arg("layout"), py::arg("devices") = std::vector<int>{},
          "Cuts a global array by a layout (a dict as ShardedExecutable.parameter_layouts gives) and copies "
          "device d's part to devices[d] (default: device d).")
      .def("reset_device", [](Client& c) { ThrowIfError(c.ResetDevice()); })
      .def(
          "transfer_to_infeed",
          [](Client& c, const std::vector<py::array>& elements, int device) {
            std::vector<hlo::Literal> literals;
            for (const py::array& element : elements) literals.push_back(LiteralFromNumpy(element));
            ThrowIfError(c.TransferToInfeed(std::move(literals), device));
          },
          py::arg("elements"), py::arg("device") = 0,
          "Queues one infeed value (its arrays, a tuple flattened) for the device; the infeeds of the programs "
          "that run there take the values in order (libtpu's TransferToInfeed). f32, int32, bfloat16 and bool only.")
      .def(
          "transfer_from_outfeed",
          [](Client& c, int device) {
            std::vector<hlo::Literal> value = ValueOrThrow(c.TransferFromOutfeed(device));
            py::list arrays;
            for (hlo::Literal& element : value) arrays.append(NumpyFromLiteral(std::move(element)));
            return arrays;
          },
          py::arg("device") = 0, "The oldest value an outfeed sent, as a list of arrays; NotFoundError when none is waiting.")
      .def("infeed_queue_size", [](const Client& c, int device) { return c.InfeedQueueSize(device); }, py::arg("device") = 0)
      .def("outfeed_queue_size", [](const Client& c, int device) { return c.OutfeedQueueSize(device); }, py::arg("device") = 0)
      .def_property_readonly("device_cycles", &Client::DeviceCycles,
                             "Device clock cycles since the client was created, host link time included.");
}

}  // namespace tpu::runtime
