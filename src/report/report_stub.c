#include "report.h"
int report_files(const char **files, int n, const struct report_opts *o) { (void)files; (void)n; (void)o; return 0; }
