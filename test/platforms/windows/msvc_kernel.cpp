// An MSVC-ABI C++ kernel (x86_64-pc-windows-msvc, exceptions and RTTI on)
// built without MSVC's headers or libraries: throws in one function and
// catches in another, uses new / delete (sized, array), a vector-like
// container, virtual calls and dynamic_cast, a static object whose
// constructor must run when the DLL loads and whose destructor must run
// when it unloads, and a function-local static (thread-safe statics).
extern "C" int sprintf(char *, const char *, ...);

struct Error {
  int code;
  const char *what;
};

template <class T> class Vec {
  T *data_ = nullptr;
  int size_ = 0, cap_ = 0;

public:
  ~Vec() { delete[] data_; }
  void push(const T &v) {
    if (size_ == cap_) {
      int c = cap_ ? cap_ * 2 : 4;
      T *d = new T[c];
      for (int i = 0; i < size_; ++i)
        d[i] = data_[i];
      delete[] data_;
      data_ = d;
      cap_ = c;
    }
    data_[size_++] = v;
  }
  int size() const { return size_; }
  T &operator[](int i) {
    if (i < 0 || i >= size_)
      throw Error{i, "index out of range"};
    return data_[i];
  }
};

struct Registry {
  int base;
  int *on_unload = nullptr;
  Registry() : base(1000) {}
  ~Registry() {
    if (on_unload)
      *on_unload = 42;
  }
};
static Registry registry;

struct Shape {
  virtual ~Shape() {}
  virtual int area() const = 0;
};
struct Square : Shape {
  int side;
  explicit Square(int s) : side(s) {}
  int area() const override { return side * side; }
};

static Vec<int> &squares() {
  static Vec<int> v; // constructed on first use, destroyed at unload
  if (v.size() == 0)
    for (int i = 0; i < 10; ++i)
      v.push(i * i);
  return v;
}

static int at(Vec<int> &v, int i) { return v[i]; }

extern "C" __declspec(dllexport) int kernel(int n, char *out) {
  Shape *shape = new Square(n);
  int area = shape->area();
  bool square = dynamic_cast<Square *>(shape) != nullptr;
  delete shape;
  try {
    sprintf(out, "ok %d", registry.base + at(squares(), n) + area + square);
    return 0;
  } catch (const Error &e) {
    sprintf(out, "caught %d %s", e.code, e.what);
    return -1;
  }
}

extern "C" __declspec(dllexport) void watch_unload(int *flag) { registry.on_unload = flag; }
