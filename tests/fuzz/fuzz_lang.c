/* fuzz_lang: libFuzzer target over the lexer, parser, compiler and VM: each
 * input is a comb program, run with a step limit, a memory cap and small
 * stacks, so that every input ends and nothing it does may crash. An input
 * starting with "#stress" runs with the collector at every safe point. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lang/load.h"
#include "store/mem.h"
#include "vm/vm.h"

#define MEM_CAP ((size_t)256 << 20)

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    devnull = fopen("/dev/null", "w");
    /* print() writes to stdout: keep the fuzzer's output readable */
    if (!freopen("/dev/null", "w", stdout))
        return -1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    VmOptions o = {.stack_slots = 1 << 16, .max_frames = 2000, .step_limit = 200000};
    size_t base = mem_in_use();
    mem_set_limit(base + MEM_CAP);
    VM *vm = vm_new(&o);
    if (!vm)
        return 0;
    /* no import: an input must not read the files of the machine */
    if (size >= 7 && !memcmp(data, "#stress", 7))
        vm_gc_stress(vm, true);
    VModule *m = lc_load_source(vm, (const char *)data, size, "<fuzz>", devnull);
    if (m && vm_run_module(vm, m) != 0)
        vm_print_error(vm, devnull);
    vm_free(vm);
    mem_set_limit(0);
    if (mem_in_use() != base) {
        fprintf(stderr, "fuzz_lang: %zu bytes leaked\n", mem_in_use() - base);
        __builtin_trap();
    }
    return 0;
}
