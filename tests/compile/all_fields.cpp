/*
 * all_fields.cpp - all_fields.c compiled as C++ (C++11 and later): the same
 * declarations and calls must compile, and link next to the C objects
 * (the C++ definition of all_fields_tu1 has another, mangled, name).
 */
#include "all_fields.c"
