/*
 * names.c - the name tables of generated profiles (op codes, modules, host
 * functions, Python frames, kernels) and the names derived from them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

const char *const gen_kind_names[3] = {"tpu", "gpu", "cpu"};

const struct opcode gen_opcodes[] = {
	{"fusion", "loop fusion"},
	{"fusion", "output fusion"},
	{"convolution", "convolution"},
	{"fusion", "convolution fusion"},
	{"dot", "convolution"},
	{"all-reduce", "all-reduce"},
	{"all-gather", "all-gather"},
	{"reduce-scatter", "reduce-scatter"},
	{"copy", "data formatting"},
	{"transpose", "data formatting"},
	{"add", "non-fusion elementwise"},
	{"multiply", "non-fusion elementwise"},
	{"reduce", "reduce"},
	{"custom-call", "custom-call"},
	{"broadcast", "non-fusion elementwise"},
	{"bitcast", "data formatting"},
};

const char *const gen_module_names[] = {
	"jit_train_step",       "jit_eval_step",
	"jit__normal",          "jit_convert_element_type",
	"jit_forward",          "jit__threefry_split",
	"jit_apply_gradients",  "jit_init",
	"jit_broadcast_in_dim", "jit__psum",
	"jit_loss_fn",          "jit_update",
};

const char *const gen_host_names[] = {
	"PjitFunction(train_step)",
	"PjRtStreamExecutorLoadedExecutable::Execute",
	"ThunkExecutor::Execute",
	"TfrtCpuExecutable::ExecuteHelper",
	"np.asarray",
	"device_put",
	"BufferFromPyval",
	"TransferToInfeed",
	"hipModuleLaunchKernel",
	"cudaLaunchKernel",
	"hipMemcpyWithStream",
	"cuStreamSynchronize",
	"DistributedRuntimeClient::WaitAtBarrier",
	"tsl::thread::ThreadPool::Schedule",
	"ParallelLoopRunner::Parallelize",
	"XlaCompile",
	"jit(train_step)/jit(main)/dot_general",
	"jit(train_step)/jit(main)/transpose",
	"LocalExecutable::Execute",
	"PjRtBuffer::ToLiteral",
};

const char *const gen_py_files[] = {
	"train.py",         "model.py",        "optax/_src/update.py",  "flax/linen/module.py",
	"jax/_src/pjit.py", "jax/_src/api.py", "data/input_pipeline.py"};
const char *const gen_py_funcs[] = {"train_step", "loss_fn",    "apply",           "__call__",
				    "update",     "cache_miss", "_pjit_call_impl", "next_batch",
				    "main",       "run_epoch"};

const char *const gen_traceme_names[] = {
	"ThunkExecutor", "TpuExecute",           "barrier-cores",       "dependency-wait",
	"ProgramLoad",   "HostToDeviceTransfer", "DeviceToHostTransfer"};
const char *const gen_counter_names[] = {"hbm_bw_utilization", "power_watts", "mxu_utilization",
					 "memory_used_bytes", "temperature_c"};
const char *const gen_kernel_names[] = {
	"Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1.kd",
	"Cijk_Ailk_Bljk_BBS_BH_MT256x224x64_MI16x16x16x1_SN_1LDSB1_APM1_ABV0_ACED0.kd",
	"gemm_fusion_dot_general_%u.kd",
	"loop_add_fusion_%u",
	"input_reduce_fusion_%u",
	"wrapped_broadcast_%u.kd",
	"__amd_rocclr_copyBuffer.kd",
	"loop_multiply_fusion_%u",
	"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_%u>(Params)",
	"triton_softmax_%u",
	"nccl_AllReduce_RING_LL_Sum_bf16_%u",
};

uint64_t gen_program_id_of(uint32_t module)
{
	return 2 * (uint64_t)module + 1;
}

/* Fills @dst with the module's name "jit_x(<program id>)" as XLA writes it. */
void gen_module_name(uint32_t module, char *dst, size_t n)
{
	snprintf(dst, n, "%s(%" PRIu64 ")", gen_module_names[module % N_MODULES],
		 gen_program_id_of(module));
}

void gen_shape_text(struct rng *r, char *dst, size_t n)
{
	const unsigned dims[] = {8, 16, 32, 128, 256, 512, 1024, 4096};

	/* draws in a fixed order (a call's arguments have none): the last dimension first */
	unsigned d2 = dims[rng_below(r, 8)], d1 = dims[rng_below(r, 8)];

	snprintf(dst, n, "bf16[%u,%u,%u]{2,1,0:T(8,128)(2,1)}", dims[rng_below(r, 8)], d1, d2);
}

/*
 * The tf_op of framework kernel @i: the forms TensorFlow, JAX and PyTorch
 * write, covering each category of TSL's ParseTfOpFullname() (TensorFlow
 * with and without a type, JAX with a type, a bracketed type or one derived
 * from the name, tf.data, memcpy, unknown, trailing whitespace).
 */
void gen_framework_op(uint32_t i, char *dst, size_t n)
{
	static const char *const forms[] = {
		"model/dense_%u/MatMul:MatMul",
		"model/dense_%u/BiasAdd:BiasAdd",
		"model/conv_%u/Conv2D_3:",
		"jit(train_step)/jvp(model)/dense_%u/dot_general:dot_general",
		"jit(train_step)/transpose_%u:transpose[permutation=(0, 2, 1)]",
		"jit(train_step)/jvp(model)/add_%u:",
		"aten::addmm",
		"MemcpyDToD",
		"Iterator::Batch::Map_%u",
		"model/dense_%u/Relu:Relu ",
	};
	const char *form = forms[i % (sizeof(forms) / sizeof(forms[0]))], *pct = strstr(form, "%u");

	if (pct) /* "%u" stands for the layer: kernels i, i + 10, ... share the form */
		snprintf(dst, n, "%.*s%u%s", (int)(pct - form), form, i / 10, pct + 2);
	else
		snprintf(dst, n, "%s", form);
}
