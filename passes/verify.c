/* --piper-verify: the tdag shape verifier as a pass, so a pipeline can re-check IR that an
 * earlier pass produced. */
#include "piper/piper.h"

static MlirLogicalResult runVerify(MlirOperation module, const char *arg) {
  return piperVerifyTdag(module);
}

MlirPass piperCreateVerifyPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-verify", "check tdag shapes", runVerify, arg);
}
