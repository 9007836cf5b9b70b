/* ROCm's own reader of code objects, as a consumer of hotlink's output:
 * prints the ISA name comgr reads from FILE and the name of every kernel
 * of its metadata, one a line ("isa NAME", "kernel NAME"). Exit 1 when
 * comgr refuses the file. */
#include <amd_comgr.h>

#include <stdio.h>
#include <stdlib.h>

static int check(amd_comgr_status_t s, const char *what) {
  if (s == AMD_COMGR_STATUS_SUCCESS)
    return 0;
  const char *text = "?";
  amd_comgr_status_string(s, &text);
  fprintf(stderr, "comgr: %s: %s\n", what, text);
  return 1;
}

static int print_string(amd_comgr_metadata_node_t node, const char *label) {
  size_t size = 0;
  if (check(amd_comgr_get_metadata_string(node, &size, NULL), label))
    return 1;
  char *s = malloc(size + 1);
  int bad = check(amd_comgr_get_metadata_string(node, &size, s), label);
  if (!bad)
    printf("%s %.*s\n", label, (int)size, s);
  free(s);
  return bad;
}

/* Prints the kernels of DATA's metadata; every node comgr hands out is the
 * caller's to destroy (CI's sanitizer stage checks this reader for leaks as
 * it checks hotlink). */
static int print_kernels(amd_comgr_data_t data) {
  amd_comgr_metadata_node_t root, kernels;
  if (check(amd_comgr_get_data_metadata(data, &root), "metadata"))
    return 1;
  int bad = check(amd_comgr_metadata_lookup(root, "amdhsa.kernels", &kernels), "amdhsa.kernels");
  if (!bad) {
    size_t count = 0;
    bad = check(amd_comgr_get_metadata_list_size(kernels, &count), "kernels");
    for (size_t i = 0; !bad && i < count; ++i) {
      amd_comgr_metadata_node_t k, name;
      bad = check(amd_comgr_index_list_metadata(kernels, i, &k), "kernel");
      if (bad)
        break;
      bad = check(amd_comgr_metadata_lookup(k, ".name", &name), ".name");
      if (!bad) {
        bad = print_string(name, "kernel");
        amd_comgr_destroy_metadata(name);
      }
      amd_comgr_destroy_metadata(k);
    }
    amd_comgr_destroy_metadata(kernels);
  }
  amd_comgr_destroy_metadata(root);
  return bad;
}

static int print_isa(amd_comgr_data_t data) {
  size_t size = 0;
  char isa[256];
  if (check(amd_comgr_get_data_isa_name(data, &size, NULL), "isa name"))
    return 1;
  if (size > sizeof isa) {
    fprintf(stderr, "comgr: isa name of %zu bytes\n", size);
    return 1;
  }
  if (check(amd_comgr_get_data_isa_name(data, &size, isa), "isa name"))
    return 1;
  printf("isa %s\n", isa);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: comgr_read FILE\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f)
    return 2;
  static char bytes[1 << 24];
  size_t n = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  amd_comgr_data_t data;
  if (check(amd_comgr_create_data(AMD_COMGR_DATA_KIND_EXECUTABLE, &data), "create_data"))
    return 1;
  int bad = check(amd_comgr_set_data(data, n, bytes), "set_data") || print_isa(data) ||
            print_kernels(data);
  amd_comgr_release_data(data);
  return bad;
}
