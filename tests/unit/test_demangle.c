/* demangle.c: Itanium names as GNU's c++filt (binutils 2.40) writes them.
 * Each case was run through `c++filt --no-recurse-limit` when written; NULL
 * where this demangler declines (outside the subset kernel names use: then
 * kname.c falls back). tests/cli/test_cli.sh compares every kernel name of
 * the bundled recordings with c++filt where it is installed. */
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "util/demangle.h"

static void test_cases(void)
{
	static const struct {
		const char *mangled, *want;
	} cases[] = {
		{ "_Z1fIiEvT_", "void f<int>(int)" },
		{ "_Z1fIJEEvv", "void f<>()" },
		{ "_Z1fIJEiEvv", "void f<, int>()" },
		{ "_Z1fIiJEEvv", "void f<int>()" },
		{ "_ZZ1fvENKUlvE_clEv", "f()::{lambda()#1}::operator()() const" },
		{ "_ZZ1fvENKUlvE_clEvS_", "f()::{lambda()#1}::operator()(void, {lambda()#1}) const" },
		{ "_Z1fIXadL_Z1gvEEEvv", "void f<&(g())>()" },
		{ "_Z1fIXadL_ZN1a1gEvEEEvv", "void f<&a::g>()" },
		{ "_Z1fIXadL_ZN1a1gEfiEEEvv", "void f<&a::g>()" },
		{ "_Z1fIXadL_ZN1a1gIiEEvvEEEvv", "void f<&(void a::g<int>())>()" },
		{ "_Z1fIXngLi1EEEvv", "void f<-(1)>()" },
		{ "_Z1fIXplLi1ELi2EEEvv", "void f<(1)+(2)>()" },
		{ "_Z1fILc65EEvv", "void f<(char)65>()" },
		{ "_Z1fILl3EEvv", "void f<3l>()" },
		{ "_Z1fILy3EEvv", "void f<3ull>()" },
		{ "_Z1fILin3EEvv", "void f<-3>()" },
		{ "_Z1fILb2EEvv", "void f<(bool)2>()" },
		{ "_Z1fIiEvPVT_", "void f<int>(int volatile*)" },
		{ "_Z1fPrKi", "f(int const restrict*)" },
		{ "_ZN1AC2Ev", "A::A()" },
		{ "_ZN1AD2Ev", "A::~A()" },
		{ "_ZN1A1fEv.part.0", "A::f() [clone .part.0]" },
		{ "_ZN12_GLOBAL__N_11fEv", "(anonymous namespace)::f()" },
		{ "_Z1fIN1AUt0_EEvS1_", "void f<A::{unnamed type#2}>({unnamed type#2})" },
		{ "_ZN1AUlvE_1fEvS0_", "A::{lambda()#1}::f(void, A::{lambda()#1})" },
		{ "_Z1fIJifEEvDpRKT_S3_", "void f<int, float>(int const&, float const&, int const&, float const&)" },
		{ "_Z1fIJifEEvT_DpT_T_", "void f<int, float>(int, int, float, float)" },
		{ "_Z1fIiEvDpT_", "void f<int>((int)...)" },
		{ "_ZN1AIiE1BIfE1fIdEEvS3_", "void A<int>::B<float>::f<double>(A<int>::B<float>::f)" },
		{ "_Z1gIZ1fIiEvT_E1AEvS1_", "void g<f<int>(int)::A>(f<int>(int)::A)" },
		{ "_ZZ1fIiEvvENKUlT_E_clEi", "f<int>()::{lambda(auto:1)#1}::operator()(int) const" },
		{ "_Z1gIXadL_Z1fIiEvvEEEvv", "void g<&(void f<int>())>()" },
		{ "_Z1fB5cxx11v", "f[abi:cxx11]()" },
		{ "_Z1fIXnt1AEEvv", "void f<!A>()" },
		{ "_ZL1fv", "f()" },
		{ "_ZNK1A1fEv", "A::f() const" },
		{ "_Z1fSt5arrayIPcLm2EES_S0_", "f(std::array<char*, 2ul>, std::array, char*)" },
		{ "_Z1fSaIcES_", "f(std::allocator<char>, std::allocator<char>)" },
		{ "_ZNSt6vectorIiE4sizeEv", "std::vector<int>::size()" },
		{ "_ZN1A1fEv.constprop.0.isra.1", "A::f() [clone .constprop.0] [clone .isra.1]" },
		{ "_ZN1AplERKS_", "A::operator+(A const&)" },
		{ "_Z1fIiEvT0_", NULL },
		{ "_Z1fIPFviEEvv", NULL },
		{ "_ZTV1A", NULL },
		{ "_Z", NULL },
		{ "_Z1", NULL },
		{ "_Z1fIiEv", NULL },
		/* real: the substitution S8_ is T1_ printed in the outer function's
		 * scope (std::array...), not the local function's (float) */
		{ "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_43_GLOBAL__N__50f1b6c4_10_Dropout_cu_"
		  "0e96ed3819masked_scale_kernelIbffEEvRNS_6TensorERKS4_S7_T1_EUlfbE_St5arrayIPcLm3EEEEviT0_S8_",
		  "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
		  "masked_scale_kernel<bool, float, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, "
		  "float)::{lambda(float, bool)#1}, std::array<char*, 3ul> >(int, at::native::(anonymous "
		  "namespace)::masked_scale_kernel<bool, float, float>(at::Tensor&, at::Tensor const&, "
		  "at::Tensor const&, float)::{lambda(float, bool)#1}, std::array<char*, 3ul>)" },
		{ "_ZN8internal5gemvx6kernelIiiffffLb0ELb1ELb0ELb0ELi6ELb0E18cublasGemvParamsExIi30cublasGemvTe"
		  "nsorStridedBatchedIKfES5_S3_IfEfEEENSt9enable_ifIXntT5_EvE4typeET11_",
		  "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, "
		  "float, false, true, false, false, 6, false, cublasGemvParamsEx<int, cublasGemvTensorStridedB"
		  "atched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBat"
		  "ched<float>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, c"
		  "ublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)" },
		{ "_Z10vector_fftILj1024E3EPTIJLj16EEELj1ELj11EL9padding_t70EL9twiddle_t0EL20loadstore_modifie"
		  "r_t2EL8layout_t0Ejf21HostConfigPlaceholderEv18kernel_arguments_tIT7_E",
		  "void vector_fft<1024u, EPT<16u>, 1u, 11u, (padding_t)70, (twiddle_t)0, (loadstore_modifier_t)"
		  "2, (layout_t)0, unsigned int, float, HostConfigPlaceholder>(kernel_arguments_t<unsigned int>)" },
	};
	char out[4096];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = gw_demangle(cases[i].mangled, out, sizeof(out));

		if (cases[i].want)
			CHECK(n == strlen(cases[i].want) && !strcmp(out, cases[i].want), "%s: got \"%s\", want \"%s\"",
			      cases[i].mangled, out, cases[i].want);
		else
			CHECK(n == 0 && !out[0], "%s: declined, got \"%s\"", cases[i].mangled, out);
	}
}

/* Short buffers, no name, names that are not mangled. */
static void test_edges(void)
{
	char out[64];

	CHECK(gw_demangle("_Z1fIiEvT_", out, 10) == 0 && !out[0], "does not fit: nothing, got \"%s\"", out);
	CHECK(gw_demangle("_Z1fIiEvT_", out, 17) == 16 && !strcmp(out, "void f<int>(int)"), "fits: %s", out);
	CHECK(gw_demangle("_Z1fIiEvT_", out, 16) == 0, "one byte short: nothing");
	CHECK(gw_demangle(NULL, out, sizeof(out)) == 0 && !out[0], "NULL");
	CHECK(gw_demangle("gw_scale", out, sizeof(out)) == 0, "a C name is not mangled");
	CHECK(gw_demangle("_Z1fIiEvT_", out, 0) == 0, "no buffer");
}

/* Damaged names (recordings are input): cut anywhere or with characters
 * changed, each comes back declined or demangled, within the buffer; a name
 * whose substitutions nest deep prints within its limits. */
static void test_damaged(void)
{
	static const char base[] =
		"_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_15CUDAFunctor_"
		"addIN3c108BFloat16EEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_";
	static const char alphabet[] = "0123456789_ZNESTILJXKPRVOUltvDpEifb";
	char name[sizeof(base)], out[2048];
	unsigned seed = 1, ok = 1;

	for (size_t k = 0; k < sizeof(base); k++) {
		memcpy(name, base, k);
		name[k] = 0;
		size_t n = gw_demangle(name, out, sizeof(out));

		ok &= n == strlen(out) && n < sizeof(out);
	}
	for (int r = 0; r < 3000; r++) {
		memcpy(name, base, sizeof(base));
		for (int j = 0; j < 3; j++) {
			seed = seed * 1103515245u + 12345u;
			name[2 + (seed >> 8) % (sizeof(base) - 3)] = alphabet[(seed >> 20) % (sizeof(alphabet) - 1)];
		}
		size_t n = gw_demangle(name, out, r % 2 ? sizeof(out) : 40);

		ok &= n == strlen(out) && n < sizeof(out);
	}
	CHECK(ok, "a damaged name overran or misreported its output");
	/* A<A<A<int>, A<int> >, A<A<int>, A<int> > >...: each level twice the
	 * last, 2^30 in all; the buffer bounds it, and it ends at once */
	char deep[512] = "_Z1f1AIiE";
	for (int k = 1; k < 30; k++) {
		char c = (char)(k - 1 < 10 ? '0' + (k - 1) : 'A' + (k - 11));
		char lvl[16];

		if (k == 1)
			snprintf(lvl, sizeof(lvl), "S_IS0_S0_E");
		else
			snprintf(lvl, sizeof(lvl), "S_IS%c_S%c_E", c, c);
		strcat(deep, lvl);
	}
	CHECK(gw_demangle(deep, out, sizeof(out)) == 0, "an output larger than the buffer is declined");
	CHECK(gw_demangle("_Z1f1AIiES_IS0_S0_E", out, sizeof(out)) > 0 &&
	      !strcmp(out, "f(A<int>, A<A<int>, A<int> >)"), "two levels: %s", out);
}

int main(void)
{
	test_cases();
	test_edges();
	test_damaged();
	T_DONE();
}
