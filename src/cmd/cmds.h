/* One function per subcommand: parse arguments, orchestrate, return the exit status. */
#ifndef GPUWHY_CMDS_H
#define GPUWHY_CMDS_H

/* Before any subcommand runs (cmds.c). */
void cmds_init(void);

int cmd_record(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_stack(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
