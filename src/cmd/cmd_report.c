#include "cmds.h"
int cmd_report(int argc, char **argv) { (void)argc; (void)argv; return 0; }
int cmd_check(int argc, char **argv) { (void)argc; (void)argv; return 0; }
