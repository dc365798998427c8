// Precompiled for every unit test file (meson's cpp_pch): Catch2's single header and the standard
// headers the tests share take ~2 of a test file's ~3-5 s to compile at -O0.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
