// Placeholder: filled in by its owner (issue 3).
#include <gtest/gtest.h>
