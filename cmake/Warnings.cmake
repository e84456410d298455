# Warnings from STYLE.md rule 14, applied to every target of the project.
add_compile_options(
  -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wpointer-arith -Wformat=2 -Wundef -Wvla)
if(CFQFS_WERROR)
  add_compile_options(-Werror)
endif()
