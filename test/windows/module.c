/* A module as hotlink loads its own on first need (base/own_module.h): one
   entry point, found by its name. */
__declspec(dllexport) int hotlink_test_module_v1(void) { return 42; }
