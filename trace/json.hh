// The JSON reader moved to runtime/json.hh (the machine file, runtime/model/machine.hh, is read
// inside the library too); this name stays for code that includes it from here.
#pragma once

#include "runtime/json.hh"
