/* lib_os: the operating system: the script's arguments, environment
 * variables, wall and CPU clocks, running a command, and exiting. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "vm/lib.h"
#include "vm/lib_store.h"

Value nat_args(VM *vm, int argc, Value *argv)
{
    (void)argc, (void)argv;
    if (!vm->args)
        vm->args = vm_array_new(vm, 0);
    return v_obj(vm->args);
}

Value nat_env(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *v = getenv(lib_cstr_arg(vm, argv, 0)->data);
    return v ? v_obj(vm_str_cstr(vm, v)) : v_nil();
}

Value nat_time(VM *vm, int argc, Value *argv)
{
    (void)vm, (void)argc, (void)argv;
    return v_int((int64_t)time(NULL));
}

Value nat_clock(VM *vm, int argc, Value *argv)
{
    /* clock("wall"): elapsed time, to set beside the CPU time on a shared machine */
    bool wall = argc > 0 && !IS_NIL(argv[0]);
    if (wall && strcmp(lib_cstr_arg(vm, argv, 0)->data, "wall") != 0)
        vm_error(vm, "the kind is \"wall\" (none: CPU time)");
    struct timespec ts;
    clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return v_float((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

Value nat_system(VM *vm, int argc, Value *argv)
{
    (void)argc;
    const char *cmd = lib_cstr_arg(vm, argv, 0)->data;
    fflush(NULL);   /* what we wrote comes before what the command writes */
    int ws = system(cmd);
    vm_store_recheck();   /* the command may have changed stores */
    if (ws < 0)
        vm_error(vm, "cannot run '%s': %s", cmd, strerror(errno));
    /* system() ignores SIGINT while the command runs, so ^C reaches only the
     * command; stop the program too, as a shell script would. */
    if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGINT)
        vm_poll_flag |= POLL_SIGINT;
    return v_int(lib_exit_status(ws));
}

Value nat_exit(VM *vm, int argc, Value *argv)
{
    int64_t status = argc ? vm_arg_int(vm, argv, 0) : 0;
    if (status < 0 || status > 255)
        vm_error(vm, "the status must be 0 to 255, got %lld", (long long)status);
    vm_iter_close(vm, vm->stack);   /* loops' cursors: a sort's temporary files */
    exit((int)status);  /* flushes and closes every stdio stream */
}
