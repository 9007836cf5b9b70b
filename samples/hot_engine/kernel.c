/* The kernel samples/hot_engine.cpp rebuilds while it runs. Edit it while
 * the engine runs: change GRAVITY or VERSION and save; the next frames run
 * the new code, and the ball keeps its height, speed and bounces (its
 * state). Change `struct Ball` (add a field) and the reload is refused until
 * you change it back: the old version keeps running. */
#include <hotlink/state.h>

#define VERSION 1
#define GRAVITY 9.81

struct Ball {
  double height, speed;
  int bounces;
};

static struct Ball HOTLINK_STATE ball = {10.0, 0.0, 0};
static long HOTLINK_STATE frames = 0;

int kernel_version(void) { return VERSION; }

/* One frame of `dt` seconds: the ball falls and bounces, losing a fifth of
 * its speed at each bounce. */
void kernel_step(double dt) {
  ++frames;
  ball.speed -= GRAVITY * dt;
  ball.height += ball.speed * dt;
  if (ball.height < 0) {
    ball.height = -ball.height;
    ball.speed = -ball.speed * 0.8;
    ++ball.bounces;
  }
}

long kernel_frames(void) { return frames; }
double kernel_height(void) { return ball.height; }
int kernel_bounces(void) { return ball.bounces; }
