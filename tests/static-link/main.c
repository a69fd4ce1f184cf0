/* Links libcuzk.a next to another Rust static library holding its own Rust standard library
 * and blst (scripts/check-static-lib.sh): both work in one program. */
#include <stdio.h>

#include "cuzk.h"

int other_g1_generator_decodes(void);

int main(void)
{
    int other = other_g1_generator_decodes();
    printf("cuzk %s (ABI %u), the other library: %d\n", cuzk_version(), cuzk_abi_version(), other);
    return (cuzk_abi_version() == CUZK_ABI_VERSION && other == 1) ? 0 : 1;
}
