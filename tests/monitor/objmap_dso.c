/* A DSO built with the instrumentation (objmap_test): its __tsan_* references
 * make it an instrumented module; its array is a global of its own. */
int objmap_dso_array[256];

int objmap_dso_fn(int i)
{
	return objmap_dso_array[i & 255]++;
}
