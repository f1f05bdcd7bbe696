// The exact f32 sum kernel's split from the bits (reduce.cu, exact_add_f32_normal) against the split
// before v23 ((double)(m << (q & 7)), digit q >> 3), for every f32 bit pattern; and the normal
// test f32_biased / f32_is_normal. gcc -O2 -o f32bits f32bits.c && ./f32bits (about 8 s).
#include <stdio.h>
#include <stdint.h>
#include <string.h>
int main(void){
  uint64_t bad=0, fast=0;
  for (uint64_t b=0;b<(1ull<<32);++b){
    uint32_t bits=(uint32_t)b; uint32_t e=(bits>>23)&0xff;
    uint32_t biased=bits*2u-(1u<<24);
    int isfast = biased < (254u<<24);
    int shouldfast = e>=1 && e<=254;
    if (isfast!=shouldfast){bad++; continue;}
    if(!isfast) continue;
    fast++;
    uint32_t m=(bits&0x7fffff)|0x800000; uint32_t q=e-1;
    double vo=(double)(m<<(q&7)); if(bits>>31) vo=-vo; uint32_t dold=q>>3;
    uint32_t digit=biased>>27;
    uint32_t hi=(uint32_t)((int32_t)bits>>3)&0x8fffffffu;
    uint32_t vhi=hi+((1045u-8u*digit)<<20);
    uint64_t vb=((uint64_t)vhi<<32)|(uint32_t)(bits<<29); double vn; memcpy(&vn,&vb,8);
    if(digit!=dold || vn!=vo){ if(bad<5) printf("bad %08x\n",bits); bad++;}
  }
  printf("fast %llu bad %llu\n",(unsigned long long)fast,(unsigned long long)bad);
  return bad!=0;
}
