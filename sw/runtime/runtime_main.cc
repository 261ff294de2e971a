// main() for the runtime tests: linking the rtl backend brings libsystemc.so, which defines a main of its
// own; this one must be the one that runs.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
