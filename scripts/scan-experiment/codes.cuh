// The variant codes scan.cu compares against (the library generates the full codes.cuh).
#pragma once
#define TALLY_SCAN_SUM 0
#define TALLY_SCAN_MIN 1
#define TALLY_SCAN_MAX 2
#define TALLY_SCAN_CUSTOM 3
