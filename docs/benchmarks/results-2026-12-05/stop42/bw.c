#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <immintrin.h>
#define N (768UL<<20)
static char *buf; static int T;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void* run(void*a){long id=(long)a; size_t per=N/T; char*p=buf+id*per; __m256 s=_mm256_setzero_ps();
 for(size_t i=0;i<per;i+=64){ s=_mm256_add_ps(s,_mm256_load_ps((float*)(p+i))); s=_mm256_add_ps(s,_mm256_load_ps((float*)(p+i+32)));}
 float o[8]; _mm256_storeu_ps(o,s); return (void*)(long)(o[0]>1e30);}
int main(int c,char**v){T=atoi(v[1]); buf=aligned_alloc(64,N); memset(buf,1,N);
 for(int r=0;r<5;r++){double t=now(); pthread_t th[8]; for(long i=0;i<T;i++)pthread_create(&th[i],0,run,(void*)i); for(int i=0;i<T;i++)pthread_join(th[i],0); double d=now()-t; printf("%d threads: %.1f ms, %.1f GB/s\n",T,d*1e3,N/d/1e9);} }
